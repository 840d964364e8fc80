#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

// Debian's libpq-dev: the PostgreSQL client library (its headers live in /usr/include/postgresql,
// which pkg-config's libpq.pc adds to the search path).
#include <libpq-fe.h>

#endif
