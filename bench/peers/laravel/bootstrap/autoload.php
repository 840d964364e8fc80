<?php

// Debian's autoloader for Laravel and its dependencies (in place of composer's vendor/), and a
// class map for the app's classes (Laravel 4's composer.json mapped app/controllers and
// app/models the same way).
require '/usr/share/php/Illuminate/autoload.php';

spl_autoload_register(function ($class) {
    static $map = [
        'BaseController' => 'app/controllers/BaseController.php',
        'NotesController' => 'app/controllers/NotesController.php',
        'Note' => 'app/models/Note.php',
        'App\\Http\\Kernel' => 'app/Http/Kernel.php',
        'App\\Console\\Kernel' => 'app/Console/Kernel.php',
        'App\\Exceptions\\Handler' => 'app/Exceptions/Handler.php',
        'App\\Providers\\RouteServiceProvider' => 'app/Providers/RouteServiceProvider.php',
    ];
    if (isset($map[$class])) {
        require __DIR__ . '/../' . $map[$class];
    }
});
