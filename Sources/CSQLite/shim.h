#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

// Debian's libsqlite3-dev. SQLITE_TRANSIENT (a macro casting -1 to a function pointer) is not
// importable; JotterStore defines it in Swift (see Statement.swift).
#include <sqlite3.h>

#endif
