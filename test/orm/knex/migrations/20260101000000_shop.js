// Authors and their books, keyed as a Knex application keys its tables:
// bigIncrements() is a bigserial primary key.
exports.up = (knex) =>
  knex.schema
    .createTable('authors', (t) => {
      t.bigIncrements('id');
      t.string('name').notNullable();
      t.timestamps(true, true);
    })
    .createTable('books', (t) => {
      t.bigIncrements('id');
      t.bigInteger('author_id').notNullable().references('id').inTable('authors');
      t.string('title').notNullable();
    });

exports.down = (knex) => knex.schema.dropTable('books').dropTable('authors');
