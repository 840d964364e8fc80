#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

// Debian's libcurl4-openssl-dev. curl_easy_setopt and curl_easy_getinfo are variadic, which Swift
// cannot call: these typed wrappers can be.
#include <curl/curl.h>

static inline CURLcode jotter_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode jotter_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode jotter_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode jotter_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*jotter_curl_data_callback)(char *buffer, size_t size, size_t count, void *context);

static inline CURLcode jotter_curl_setopt_data_callback(CURL *handle, CURLoption option, jotter_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode jotter_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
