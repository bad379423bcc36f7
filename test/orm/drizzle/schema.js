// The tables of test/t/074_orm_drizzle.pl, keyed as docs/orms.md tells:
// bigint with the default flake_next(), which drizzle-kit compares equal
// to the column's.  (A bigserial key drizzle-kit push would try to turn
// into "bigserial", a type that does not exist; an identity key it
// declares with sequence options, which keep their sequence.)  Ids are
// strings in JavaScript, as node-postgres returns them: whole.  Drizzle's
// bigint() has two modes, and neither fits: 'number' rounds the ids (a
// lookup finds nothing), 'bigint' makes JSON.stringify throw.
'use strict';
const { pgTable, customType, text } = require('drizzle-orm/pg-core');
const { sql } = require('drizzle-orm');

const id64 = customType({ dataType: () => 'bigint' });
const flakeKey = () => id64('id').primaryKey().default(sql`flake_next()`);

const authors = pgTable('authors', {
  id: flakeKey(),
  name: text('name').notNull(),
});
const books = pgTable('books', {
  id: flakeKey(),
  authorId: id64('author_id').notNull().references(() => authors.id),
  title: text('title').notNull(),
});

module.exports = { authors, books };
