<?php

// Artisan's commands need a cache store; the app itself caches nothing.
return [
    'default' => 'array',
    'stores' => [
        'array' => ['driver' => 'array', 'serialize' => false],
    ],
];
