<?php

Route::Resource('notes', 'NotesController');
