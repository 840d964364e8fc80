#ifndef CLLHTTP_H
#define CLLHTTP_H

#include <stdint.h>
#include <stddef.h>
#include "llhttp.h"

/// A byte range of the buffer being parsed, as an offset from its start.
typedef struct jotter_span {
    uint32_t offset;
    uint32_t length;
} jotter_span;

/// What a parse call found, in order: the head of a request, a piece of its body, its end.
enum {
    JOTTER_EVENT_HEAD = 1,
    JOTTER_EVENT_BODY = 2,
    JOTTER_EVENT_END = 3,
};

typedef struct jotter_event {
    uint32_t kind;
    jotter_span span;  /* JOTTER_EVENT_BODY: the bytes */
} jotter_event;

enum {
    JOTTER_MAX_FIELDS = 100,
    JOTTER_MAX_EVENTS = 32,
};

/// Why the parser stopped with an error of Jotter's own (llhttp's own errors are in `llhttp`).
enum {
    JOTTER_LIMIT_NONE = 0,
    JOTTER_LIMIT_TARGET = 414,   /* the request-target is longer than max_target */
    JOTTER_LIMIT_HEAD = 431,     /* the head is larger than max_head, or has too many fields */
    JOTTER_LIMIT_FOLDED = 400,   /* a header line continued by obsolete line folding */
    JOTTER_LIMIT_BARE_LF = 1400, /* a line of the head, or a chunked body's last line, ends in LF alone */
    JOTTER_LIMIT_VERSION = 505,  /* a request line of HTTP/0.9 (no version) or HTTP/2 and later */
};

/// One connection's HTTP/1.1 request parser: llhttp, strict, with the head recorded as spans of
/// the buffer being parsed (no copy, no allocation) and every event queued for Swift to take.
///
/// The head of one request must lie in one buffer: when a call ends inside a head, the caller
/// moves the bytes from `message_start` to the front of a buffer of its own, calls
/// `jotter_parser_rebase`, and parses what follows into that buffer right after them.
typedef struct jotter_parser {
    llhttp_t llhttp;
    /* Limits, set once. */
    uint32_t max_target;
    uint32_t max_head;
    /* The request being parsed. */
    jotter_span method;
    jotter_span target;
    uint32_t version_end;  /* just past the request line's version ("HTTP/1.1"): its CR */
    jotter_span names[JOTTER_MAX_FIELDS];
    jotter_span values[JOTTER_MAX_FIELDS];
    uint32_t field_count;
    uint32_t message_start;
    int in_head;
    int value_open;   /* the last callback was a value piece of names[field_count - 1] */
    uint32_t limit;   /* JOTTER_LIMIT_* */
    char last_byte;   /* the last byte of the previous call's data */
    /* The call in progress. */
    const char *base;
    jotter_event events[JOTTER_MAX_EVENTS];
    uint32_t event_count;
} jotter_parser;

/// Initializes `parser` for requests (strict llhttp, no lenient flag).
void jotter_parser_init(jotter_parser *parser, uint32_t max_target, uint32_t max_head);

/// Parses `data[from..<to]` of the buffer that starts at `data`. Stops after a head, after a
/// request's end, when the event queue is full, or on an error. Returns llhttp's error
/// (HPE_OK: all consumed; HPE_PAUSED: stopped early, `*consumed` says where).
llhttp_errno_t jotter_parser_execute(jotter_parser *parser, const char *data, uint32_t from, uint32_t to, uint32_t *consumed);

/// The spans recorded for the head in progress moved `delta` bytes towards the buffer's start.
void jotter_parser_rebase(jotter_parser *parser, uint32_t delta);

/// llhttp's description of its error, or "" when none.
const char *jotter_parser_reason(const jotter_parser *parser);

#endif
