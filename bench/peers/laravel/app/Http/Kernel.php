<?php

namespace App\Http;

use Illuminate\Foundation\Http\Kernel as HttpKernel;

// No global middleware and no groups: the tutorial's Laravel 4 routes ran none (no session,
// no CSRF filter, no input trimming).
class Kernel extends HttpKernel
{
    protected $middleware = [];

    protected $middlewareGroups = [];

    protected $routeMiddleware = [];
}
