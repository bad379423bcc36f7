// test/t/073_orm_typeorm.pl: TypeORM's synchronize makes the tables, as an
// application started three times with synchronize: true does; before
// each start the schema builder (what migration:generate runs too) says
// what it would change.  The keys are declared as docs/orms.md tells:
// bigint with the default flake_next(), which TypeORM compares equal to
// the column's; a generated: 'increment' key it would turn back into a
// sequence (issue 38).  The application inserts through TypeORM and prints
// what the test checks (see test/t/FlakeOrm.pm).
'use strict';
require('reflect-metadata');
const { DataSource, EntitySchema } = require('typeorm');
const { roundTrip, connection, version } = require('../js/common');

const flakeKey = { type: 'bigint', primary: true, default: () => 'flake_next()' };
const Author = new EntitySchema({
  name: 'Author',
  tableName: 'authors',
  columns: { id: flakeKey, name: { type: 'text' } },
});
const Book = new EntitySchema({
  name: 'Book',
  tableName: 'books',
  columns: { id: flakeKey, title: { type: 'text' } },
  relations: {
    author: { type: 'many-to-one', target: 'Author', joinColumn: { name: 'author_id' }, nullable: false },
  },
});

function dataSource() {
  return new DataSource({
    type: 'postgres',
    host: connection.host,
    port: connection.port,
    username: connection.user,
    database: connection.database,
    entities: [Author, Book],
    synchronize: false,
  });
}

async function main() {
  // three starts: the changes each would make, then synchronize
  const pending = [];
  for (let start = 0; start < 3; start++) {
    const ds = await dataSource().initialize();
    const log = await ds.driver.createSchemaBuilder().log();
    pending.push(log.upQueries.map((q) => q.query));
    await ds.synchronize();
    await ds.destroy();
  }

  const ds = await dataSource().initialize();
  const authorsRepo = ds.getRepository('Author');
  const started = Date.now();
  const made = await ds.transaction(async (em) => {
    const authors = [];
    for (const name of ['Ada', 'Grace', 'Edsger']) {
      authors.push(await em.getRepository('Author').save({ name }));
    }
    const books = [];
    for (const author of authors) {
      books.push(await em.getRepository('Book').save({ author, title: `A book by ${author.name}` }));
    }
    return { authors, books };
  });
  const finished = Date.now();

  const names = (await ds.getRepository('Book').find({ relations: { author: true }, order: { id: 'ASC' } }))
    .map((b) => b.author.name);
  let fkRefused = false;
  try {
    await ds.query('INSERT INTO books (author_id, title) VALUES ($1, $2)', ['1', 'orphan']);
  } catch (e) {
    fkRefused = e.code === '23503';
  }
  const id = made.authors[1].id;

  console.log(JSON.stringify({
    orm: `TypeORM ${version('typeorm')} (pg ${version('pg')}, Node ${process.version})`,
    started_ms: started,
    finished_ms: finished,
    authors: made.authors.map((a) => a.id),
    books: made.books.map((b) => [b.id, b.author.id]),
    names,
    fk_refused: fkRefused,
    id_class: typeof id,
    pending,
    ...roundTrip(id, await authorsRepo.findOneBy({ id })),
  }));
  await ds.destroy();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
