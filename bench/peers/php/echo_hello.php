<?php
echo "Hello " . $_REQUEST['name'] . "!";
?>
