// test/t/072_orm_knex.pl: Knex's migrations make the tables, then the
// application inserts through Knex and prints what the test checks (see
// test/t/FlakeOrm.pm).  node-postgres returns bigint as a string, so the
// 64-bit ids reach JavaScript whole; compared as BigInt, looked up by id
// and through JSON.stringify.
'use strict';
const path = require('path');
const { roundTrip } = require('../js/common');
const knex = require('knex')({
  client: 'pg',
  connection: {
    host: process.env.PGHOST,
    port: Number(process.env.PGPORT),
    user: process.env.PGUSER,
    database: process.env.PGDATABASE,
  },
  migrations: { directory: path.join(__dirname, 'migrations') },
});

async function main() {
  await knex.migrate.latest();

  const started = Date.now();
  const made = await knex.transaction(async (trx) => {
    const authors = [];
    for (const name of ['Ada', 'Grace', 'Edsger']) {
      const [author] = await trx('authors').insert({ name }).returning('id');
      authors.push(author.id);
    }
    const books = [];
    for (const id of authors) {
      const [book] = await trx('books')
        .insert({ author_id: id, title: `A book by ${id}` })
        .returning(['id', 'author_id']);
      books.push([book.id, book.author_id]);
    }
    return { authors, books };
  });
  const finished = Date.now();

  const names = await knex('books')
    .join('authors', 'authors.id', 'books.author_id')
    .orderBy('books.id')
    .pluck('authors.name');
  let fkRefused = false;
  try {
    await knex('books').insert({ author_id: '1', title: 'orphan' });
  } catch (e) {
    fkRefused = e.code === '23503';
  }
  const ids = made.authors.map(BigInt);
  const increasing = ids.every((id, i) => i === 0 || id > ids[i - 1]);
  const again = await knex('authors').where({ id: made.authors[1] }).first();
  // the second migration finds nothing to do
  const [, pending] = await knex.migrate.list();

  console.log(JSON.stringify({
    orm: `Knex ${require('knex/package.json').version} (pg ${require('pg/package.json').version}, Node ${process.version})`,
    started_ms: started,
    finished_ms: finished,
    authors: made.authors,
    books: made.books,
    names,
    fk_refused: fkRefused,
    id_class: typeof made.authors[0],
    increasing_in_js: increasing,
    ...roundTrip(made.authors[1], again),
    pending_migrations: pending.length,
  }));
  await knex.destroy();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
