<?php

// Only Laravel's own error pages are rendered (a 500 with APP_DEBUG=false).
return [
    'paths' => [],
    'compiled' => storage_path('framework/views'),
];
