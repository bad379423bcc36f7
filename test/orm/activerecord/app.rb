# test/t/071_orm_activerecord.pl: ActiveRecord's migrations (the
# MigrationContext a Rails application's db:migrate runs) make the tables,
# then the application inserts through ActiveRecord and prints what the
# test checks (see test/t/FlakeOrm.pm).
require 'active_record'
require 'json'
require 'pg'

ActiveRecord::Base.establish_connection(
  adapter: 'postgresql', host: ENV['PGHOST'], port: ENV['PGPORT'],
  username: ENV['PGUSER'], database: ENV['PGDATABASE']
)
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

puts JSON.generate(
  orm: "ActiveRecord #{ActiveRecord::VERSION::STRING} (pg #{PG::VERSION}, Ruby #{RUBY_VERSION})",
  started_ms: started,
  finished_ms: finished,
  authors: authors.map { |author| author.id.to_s },
  books: books.map { |book| [book.id.to_s, book.author_id.to_s] },
  names: names,
  fk_refused: fk_refused,
  id_class: authors.first.id.class.name
)
