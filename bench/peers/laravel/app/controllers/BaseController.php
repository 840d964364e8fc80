<?php

// Laravel 4's skeleton base controller, on Laravel 8's routing controller.
class BaseController extends Illuminate\Routing\Controller {
}
