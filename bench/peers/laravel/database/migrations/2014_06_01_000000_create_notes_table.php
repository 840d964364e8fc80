<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;

// The migration `php artisan generate:resource note --fields="body:text"` writes.
class CreateNotesTable extends Migration {

	public function up()
	{
		Schema::create('notes', function(Blueprint $table) {
			$table->increments('id');
			$table->text('body');
			$table->timestamps();
		});
	}

	public function down()
	{
		Schema::drop('notes');
	}

}
