// test/t/075_ids_as_text.pl: ids as strings, as a JavaScript application
// keeps them (node-postgres returns a bigint as a string), sent back as
// parameters: untyped (node-postgres's default, as Prisma's $queryRaw and
// Sequelize's replacements send theirs) and typed text, beside the same id
// as a bigint.  Prints one line of JSON: for each way, what the decoders
// read of a Snowflake id, and flake_timestamp of a ulidflake's text.
'use strict';
const { Client } = require('pg');
const { connection } = require('../js/common');

const decoders = (param) => `SELECT flake_timestamp(${param})::text AS ts, flake_node(${param}) AS node,
  flake_sequence(${param}) AS sequence, (flake_decode(${param})).ts::text AS decoded_ts`;

async function main() {
  const client = new Client(connection);
  await client.connect();
  const one = async (sql, params) => (await client.query(sql, params)).rows[0];
  const { id, ulid } = await one('SELECT flake_next() AS id, ulidflake_next()::text AS ulid');
  const out = { id, id_class: typeof id, ulid, decoded: {}, ulid_ts: {} };
  for (const [way, param] of [['bigint', '$1::bigint'], ['untyped', '$1'], ['text', '$1::text']])
    out.decoded[way] = await one(decoders(param), [id]);
  for (const [way, param] of [['ulidflake', '$1::ulidflake'], ['untyped', '$1'], ['text', '$1::text']])
    out.ulid_ts[way] = (await one(`SELECT flake_timestamp(${param})::text AS ts`, [ulid])).ts;
  await client.end();
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
