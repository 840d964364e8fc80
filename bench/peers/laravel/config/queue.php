<?php

// Artisan's queue commands need a queue; the app queues nothing.
return [
    'default' => 'sync',
    'connections' => [
        'sync' => ['driver' => 'sync'],
    ],
];
