// test/t/076_orm_sequelize.pl: what Sequelize's default model gets from
// flake.serial_default.  A model that declares no key gets Sequelize's
// default, INTEGER autoIncrement (a serial): too narrow for flake ids, it
// keeps its sequence; one that declares its key DataTypes.BIGINT gets
// flake ids.  Then flake_sequence_keys() names the narrow key; a session
// with flake.serial_default_narrow = error has sync() refuse such a model;
// and an id sent back through Sequelize's replacements (a quoted literal)
// decodes as the bigint.  Prints one line of JSON.
'use strict';
const { Sequelize, DataTypes, QueryTypes } = require('sequelize');
const { connection, version } = require('../js/common');

function open(options) {
  return new Sequelize(connection.database, connection.user, null, {
    host: connection.host, port: connection.port, dialect: 'postgres', logging: false,
    dialectOptions: options ? { options } : {},
  });
}

async function main() {
  const sequelize = open();
  const select = (sql, replacements) => sequelize.query(sql, { replacements, type: QueryTypes.SELECT });
  // the default model: no key declared
  const Widget = sequelize.define('Widget', { name: DataTypes.STRING });
  // the key declared 64-bit, as docs/orms.md says
  const Author = sequelize.define('Author', {
    id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
    name: DataTypes.STRING,
  });
  await sequelize.sync();
  const widget = await Widget.create({ name: 'w' });
  const author = await Author.create({ name: 'Ada' });
  const keys = await select('SELECT table_name::text, column_name, type::text FROM flake_sequence_keys()');
  const [decoded] = await select(
    'SELECT flake_timestamp(:id)::text AS as_text, flake_timestamp(CAST(:id AS bigint))::text AS as_bigint',
    { id: author.id });

  // a session that refuses narrow keys
  const strict = open('-c flake.serial_default_narrow=error');
  strict.define('Gadget', { name: DataTypes.STRING });
  let refused = null;
  try {
    await strict.sync();
  } catch (e) {
    refused = e.message;
  }
  const [gadgets] = await strict.query("SELECT to_regclass('\"Gadgets\"')::text AS made");
  await strict.close();

  console.log(JSON.stringify({
    orm: `Sequelize ${version('sequelize')} (pg ${version('pg')}, Node ${process.version})`,
    widget_id: widget.id, widget_id_class: typeof widget.id,
    author_id: author.id, author_id_class: typeof author.id,
    sequence_keys: keys, decoded, refused, gadgets_made: gadgets[0].made,
  }));
  await sequelize.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
