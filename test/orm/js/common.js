// What the Node ORM tests (test/t/072-074) share.
'use strict';
const fs = require('fs');
const path = require('path');

// An id (a string, as node-postgres returns a bigint) and the row the ORM
// found by it, through JSON.stringify and back: whole only as a string.
function roundTrip(id, found) {
  const inJson = found ? JSON.parse(JSON.stringify(found)) : null;
  return {
    looked_up: found ? found.name : null,
    json_id_whole: Boolean(inJson) && inJson.id === id && BigInt(inJson.id) > 2n ** 53n,
  };
}

// The connection the test gives (PGHOST, PGPORT, PGUSER, PGDATABASE).
const connection = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  user: process.env.PGUSER,
  database: process.env.PGDATABASE,
};

// A package's version, read from its package.json (which not every
// package exports to require()).
function version(name) {
  let dir = path.dirname(require.resolve(name));
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
}

module.exports = { roundTrip, connection, version };
