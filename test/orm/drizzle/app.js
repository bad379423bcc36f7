// test/t/074_orm_drizzle.pl: after drizzle-kit has made the tables (push),
// the application inserts through Drizzle with node-postgres and prints
// what the test checks (see test/t/FlakeOrm.pm).
'use strict';
const { Pool } = require('pg');
const { drizzle } = require('drizzle-orm/node-postgres');
const { eq, asc } = require('drizzle-orm');
const { roundTrip, connection, version } = require('../js/common');
const { authors, books } = require('./schema');

async function main() {
  const pool = new Pool(connection);
  const db = drizzle(pool);
  const started = Date.now();
  const made = await db.transaction(async (tx) => {
    const madeAuthors = [];
    for (const name of ['Ada', 'Grace', 'Edsger']) {
      const [author] = await tx.insert(authors).values({ name }).returning();
      madeAuthors.push(author);
    }
    const madeBooks = [];
    for (const author of madeAuthors) {
      const [book] = await tx.insert(books)
        .values({ authorId: author.id, title: `A book by ${author.name}` }).returning();
      madeBooks.push(book);
    }
    return { authors: madeAuthors, books: madeBooks };
  });
  const finished = Date.now();

  const names = (await db.select({ name: authors.name }).from(books)
    .innerJoin(authors, eq(books.authorId, authors.id)).orderBy(asc(books.id)))
    .map((r) => r.name);
  let fkRefused = false;
  try {
    await db.insert(books).values({ authorId: '1', title: 'orphan' });
  } catch (e) {
    fkRefused = (e.cause || e).code === '23503';
  }
  const id = made.authors[1].id;
  const [found] = await db.select().from(authors).where(eq(authors.id, id));

  console.log(JSON.stringify({
    orm: `Drizzle ${version('drizzle-orm')} (pg ${version('pg')}, Node ${process.version})`,
    started_ms: started,
    finished_ms: finished,
    authors: made.authors.map((a) => a.id),
    books: made.books.map((b) => [b.id, b.authorId]),
    names,
    fk_refused: fkRefused,
    id_class: typeof id,
    ...roundTrip(id, found),
  }));
  await pool.end();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
