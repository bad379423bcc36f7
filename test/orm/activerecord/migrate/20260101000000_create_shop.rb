# Authors and their books, keyed as ActiveRecord keys tables: create_table's
# primary key is a bigserial, references a bigint with a foreign key.
class CreateShop < ActiveRecord::Migration[ActiveRecord::VERSION::STRING.to_f]
  def change
    create_table :authors do |t|
      t.string :name, null: false
      t.timestamps
    end
    create_table :books do |t|
      t.references :author, null: false, foreign_key: true
      t.string :title, null: false
    end
  end
end
