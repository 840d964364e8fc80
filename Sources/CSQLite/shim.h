#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

// Debian's libsqlite3-dev. SQLITE_TRANSIENT (a macro casting -1 to a function pointer) is not
// importable; JotterStore defines it in Swift (see Statement.swift).
#include <sqlite3.h>

// sqlite3_db_config is variadic, which Swift cannot call: one fixed form per option used.
static inline int jotter_sqlite3_enable_triggers(sqlite3 *db, int enable) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, enable, (int *)0);
}

#endif
