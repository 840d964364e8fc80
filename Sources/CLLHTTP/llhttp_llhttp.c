// llhttp 8.1 as Debian's node-llhttp installs it, compiled in place (the repository holds none of
// its sources; scripts/install-deps installs node-llhttp).
// Strict mode: llhttp's own checks of RFC 9112 that its default build leaves out (CRLF after
// chunk data, and more).
#define LLHTTP_STRICT_MODE 1
#include "/usr/share/llhttp/llhttp.c"
