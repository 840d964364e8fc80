<?php

namespace App\Providers;

use Illuminate\Foundation\Support\Providers\RouteServiceProvider as ServiceProvider;
use Illuminate\Support\Facades\Route;

// Loads the tutorial's app/routes.php (Laravel 4's place for it), or the route cache.
class RouteServiceProvider extends ServiceProvider
{
    public function boot()
    {
        $this->routes(function () {
            Route::group([], base_path('app/routes.php'));
        });
    }
}
