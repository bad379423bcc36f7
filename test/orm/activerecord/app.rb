# test/t/071_orm_activerecord.pl: ActiveRecord's migrations (the
# MigrationContext a Rails application's db:migrate runs) make the tables,
# then the application inserts through ActiveRecord and prints what the
# test checks (see test/t/FlakeOrm.pm).  Then what db:schema:dump,
# db:structure:dump and db:test:prepare do, through the DatabaseTasks they
# call: schema.rb and structure.sql of the database, the test database
# app_test purged and loaded from schema.rb, an author made there, and
# schema.rb dumped again from it.
require 'active_record'
require 'active_record/database_configurations'
require 'active_record/tasks/database_tasks'
require 'json'
require 'pg'
require 'stringio'
require 'tmpdir'

def config(env, database)
  ActiveRecord::DatabaseConfigurations::HashConfig.new(
    env, 'primary',
    adapter: 'postgresql', host: ENV['PGHOST'], port: ENV['PGPORT'],
    username: ENV['PGUSER'], database: database
  )
end

def schema_rb
  io = StringIO.new
  ActiveRecord::SchemaDumper.dump(ActiveRecord::Base.connection, io)
  io.string
end

development = config('development', ENV['PGDATABASE'])
ActiveRecord::Base.establish_connection(development)
ActiveRecord::MigrationContext.new(File.join(__dir__, 'migrate'), ActiveRecord::SchemaMigration).migrate

class Author < ActiveRecord::Base
  has_many :books
end

class Book < ActiveRecord::Base
  belongs_to :author
end

started = (Time.now.to_f * 1000).to_i
authors = books = nil
ActiveRecord::Base.transaction do
  authors = %w[Ada Grace Edsger].map { |name| Author.create!(name: name) }
  books = authors.map { |author| Book.create!(author: author, title: "A book by #{author.name}") }
end
finished = (Time.now.to_f * 1000).to_i

names = Book.includes(:author).order(:id).map { |book| book.author.name }
fk_refused = begin
  Book.new(author_id: 1, title: 'orphan').save!(validate: false)
  false
rescue ActiveRecord::InvalidForeignKey
  true
end

dir = Dir.mktmpdir
schema_file = File.join(dir, 'schema.rb')
File.write(schema_file, schema = schema_rb)
structure_file = File.join(dir, 'structure.sql')
ActiveRecord::Tasks::DatabaseTasks.structure_dump(development, structure_file)
structure = File.read(structure_file)

# db:test:prepare
test = config('test', "#{ENV['PGDATABASE']}_test")
ActiveRecord::Tasks::DatabaseTasks.purge(test)
ActiveRecord::Tasks::DatabaseTasks.load_schema(test, :ruby, schema_file)
ActiveRecord::Base.establish_connection(test)
test_author = Author.create!(name: 'Barbara')
test_schema = schema_rb

puts JSON.generate(
  orm: "ActiveRecord #{ActiveRecord::VERSION::STRING} (pg #{PG::VERSION}, Ruby #{RUBY_VERSION})",
  started_ms: started,
  finished_ms: finished,
  authors: authors.map { |author| author.id.to_s },
  books: books.map { |book| [book.id.to_s, book.author_id.to_s] },
  names: names,
  fk_refused: fk_refused,
  id_class: authors.first.id.class.name,
  schema_rb: schema,
  structure_sql: structure,
  test_database: ActiveRecord::Base.connection.current_database,
  test_id: test_author.id.to_s,
  test_schema_rb_same: test_schema == schema
)
