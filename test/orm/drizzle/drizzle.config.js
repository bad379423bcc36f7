// drizzle-kit's configuration for test/t/074_orm_drizzle.pl.  tablesFilter
// leaves flake's view flake_leases, in the extension's schema, alone:
// without it, push would drop it (refused: the extension needs it).
'use strict';
const { connection } = require('../js/common');

module.exports = {
  dialect: 'postgresql',
  schema: './schema.js',
  out: './migrations',
  tablesFilter: ['!flake_*'],
  dbCredentials: { ...connection, ssl: false },
};
