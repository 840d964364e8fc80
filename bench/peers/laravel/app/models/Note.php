<?php

// The model `php artisan generate:resource note --fields="body:text"` writes.
class Note extends Eloquent {
	protected $guarded = array();

	public static $rules = array();

	// Laravel 7's upgrade guide: keep the Y-m-d H:i:s dates of Laravel 4-6 (the tutorial's
	// iPhone client parses them with "yyyy-MM-dd H:mm:ss").
	protected function serializeDate(DateTimeInterface $date) {
		return $date->format('Y-m-d H:i:s');
	}
}
