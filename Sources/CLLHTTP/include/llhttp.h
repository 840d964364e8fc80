/* llhttp's sources include "llhttp.h": it is Debian's, from node-llhttp. */
#include "/usr/share/include/llhttp/llhttp.h"
