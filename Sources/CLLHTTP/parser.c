#define LLHTTP_STRICT_MODE 1
#include "CLLHTTP.h"
#include <string.h>

#define PARSER(p) ((jotter_parser *)(p))

static int push(jotter_parser *parser, uint32_t kind, uint32_t offset, uint32_t length) {
    jotter_event *event = &parser->events[parser->event_count++];
    event->kind = kind;
    event->span.offset = offset;
    event->span.length = length;
    return parser->event_count == JOTTER_MAX_EVENTS ? HPE_PAUSED : 0;
}

/* Extends `span` with a piece that continues it, or starts it. False when the piece does not
   continue it (something lies between: obsolete line folding). */
static int extend(jotter_span *span, uint32_t offset, uint32_t length) {
    if (span->length == 0) {
        span->offset = offset;
        span->length = length;
        return 1;
    }
    if (span->offset + span->length != offset) return 0;
    span->length += length;
    return 1;
}

static int within_head(jotter_parser *parser, const char *at, size_t length) {
    uint32_t end = (uint32_t)(at - parser->base) + (uint32_t)length;
    if (end - parser->message_start > parser->max_head) {
        parser->limit = JOTTER_LIMIT_HEAD;
        return 0;
    }
    return 1;
}

static int on_message_begin(llhttp_t *p) {
    jotter_parser *parser = PARSER(p);
    memset(&parser->method, 0, sizeof parser->method);
    memset(&parser->target, 0, sizeof parser->target);
    parser->field_count = 0;
    parser->version_end = 0;
    parser->value_open = 0;
    parser->in_head = 1;
    return 0;
}

static int on_method(llhttp_t *p, const char *at, size_t length) {
    jotter_parser *parser = PARSER(p);
    if (parser->method.length == 0) parser->message_start = (uint32_t)(at - parser->base);
    extend(&parser->method, (uint32_t)(at - parser->base), (uint32_t)length);
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t length) {
    jotter_parser *parser = PARSER(p);
    extend(&parser->target, (uint32_t)(at - parser->base), (uint32_t)length);
    if (parser->target.length > parser->max_target) {
        parser->limit = JOTTER_LIMIT_TARGET;
        return HPE_USER;
    }
    return within_head(parser, at, length) ? 0 : HPE_USER;
}

static int on_version(llhttp_t *p, const char *at, size_t length) {
    jotter_parser *parser = PARSER(p);
    parser->version_end = (uint32_t)(at - parser->base) + (uint32_t)length;
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t length) {
    jotter_parser *parser = PARSER(p);
    if (!within_head(parser, at, length)) return HPE_USER;
    uint32_t offset = (uint32_t)(at - parser->base);
    if (parser->value_open || parser->field_count == 0) {
        if (parser->field_count == JOTTER_MAX_FIELDS) {
            parser->limit = JOTTER_LIMIT_HEAD;
            return HPE_USER;
        }
        parser->names[parser->field_count].offset = offset;
        parser->names[parser->field_count].length = 0;
        parser->values[parser->field_count].offset = 0;
        parser->values[parser->field_count].length = 0;
        parser->field_count++;
        parser->value_open = 0;
    }
    extend(&parser->names[parser->field_count - 1], offset, (uint32_t)length);
    return 0;
}

static int on_header_field_complete(llhttp_t *p) {
    jotter_parser *parser = PARSER(p);
    /* The value may be empty: no value callback follows then. */
    parser->value_open = 1;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t length) {
    jotter_parser *parser = PARSER(p);
    if (length == 0) return 0;  /* an empty value is reported where the next line begins */
    if (!within_head(parser, at, length)) return HPE_USER;
    jotter_span *value = &parser->values[parser->field_count - 1];
    if (value->length == 0) {
        /* A value that begins on a line of its own ("Name:\r\n value") was folded. */
        const char *start = parser->base + parser->message_start;
        const char *q = at;
        while (q > start && (q[-1] == ' ' || q[-1] == '\t')) q--;
        if (q > start && q[-1] == '\n') {
            parser->limit = JOTTER_LIMIT_FOLDED;
            return HPE_USER;
        }
    }
    if (!extend(value, (uint32_t)(at - parser->base), (uint32_t)length)) {
        parser->limit = JOTTER_LIMIT_FOLDED;
        return HPE_USER;
    }
    return 0;
}

static int on_headers_complete(llhttp_t *p) {
    jotter_parser *parser = PARSER(p);
    parser->in_head = 0;
    /* llhttp takes a request line without a version for HTTP/0.9, and any major version. */
    if (p->http_major != 1) {
        parser->limit = JOTTER_LIMIT_VERSION;
        return HPE_USER;
    }
    /* llhttp takes a bare LF at the end of the request line (and of the head, below, and of a
       chunked body's last line): RFC 9112 §2.2 lets a recipient do so, but a proxy in front
       that does not would see other messages than this server. Refused, as bare LF is
       everywhere else. The whole head lies in this buffer. */
    if (parser->base[parser->version_end] != '\r') {
        parser->limit = JOTTER_LIMIT_BARE_LF;
        return HPE_USER;
    }
    /* No protocol switch on HTTP/1.1 (Upgrade: h2c, websocket; CONNECT): the request is
       answered as any other, and the connection goes on in HTTP/1.1. */
    p->upgrade = 0;
    push(parser, JOTTER_EVENT_HEAD, 0, 0);
    return HPE_PAUSED;
}

static int on_body(llhttp_t *p, const char *at, size_t length) {
    jotter_parser *parser = PARSER(p);
    if (parser->event_count == JOTTER_MAX_EVENTS) return HPE_USER;  /* cannot happen: see on_chunk_complete */
    push(parser, JOTTER_EVENT_BODY, (uint32_t)(at - parser->base), (uint32_t)length);
    return 0;
}

/* A chunked body gives at most one body piece per chunk: stop while the queue has room. */
static int on_chunk_complete(llhttp_t *p) {
    jotter_parser *parser = PARSER(p);
    return parser->event_count + 4 >= JOTTER_MAX_EVENTS ? HPE_PAUSED : 0;
}

static int on_message_complete(llhttp_t *p) {
    jotter_parser *parser = PARSER(p);
    push(parser, JOTTER_EVENT_END, 0, 0);
    return HPE_PAUSED;
}

static llhttp_settings_t settings;
static int settings_ready;

void jotter_parser_init(jotter_parser *parser, uint32_t max_target, uint32_t max_head) {
    if (!settings_ready) {
        /* Identical on every call, so a race between threads writes the same bytes. */
        llhttp_settings_t s;
        llhttp_settings_init(&s);
        s.on_message_begin = on_message_begin;
        s.on_method = on_method;
        s.on_url = on_url;
        s.on_version = on_version;
        s.on_header_field = on_header_field;
        s.on_header_field_complete = on_header_field_complete;
        s.on_header_value = on_header_value;
        s.on_headers_complete = on_headers_complete;
        s.on_body = on_body;
        s.on_message_complete = on_message_complete;
        s.on_chunk_complete = on_chunk_complete;
        settings = s;
        settings_ready = 1;
    }
    memset(parser, 0, sizeof *parser);
    llhttp_init(&parser->llhttp, HTTP_REQUEST, &settings);
    parser->max_target = max_target;
    parser->max_head = max_head;
}

llhttp_errno_t jotter_parser_execute(jotter_parser *parser, const char *data, uint32_t from, uint32_t to, uint32_t *consumed) {
    parser->base = data;
    parser->event_count = 0;
    if (!parser->in_head) parser->message_start = from;
    llhttp_errno_t error = llhttp_execute(&parser->llhttp, data + from, to - from);
    char last_byte = parser->last_byte;
    if (error == HPE_OK) {
        *consumed = to;
    } else {
        const char *position = llhttp_get_error_pos(&parser->llhttp);
        *consumed = position ? (uint32_t)(position - data) : to;
    }
    if (*consumed > from) parser->last_byte = data[*consumed - 1];
    if (error != HPE_OK) {
        if (error == HPE_PAUSED) {
            /* Paused just past the LF that ends a head (its empty line) or a chunked body
               (the empty line after the last chunk or the trailer fields): a CR comes first. */
            uint32_t kind = parser->event_count ? parser->events[parser->event_count - 1].kind : 0;
            int chunked = (parser->llhttp.flags & F_CHUNKED) != 0;
            char before = *consumed >= from + 2 ? data[*consumed - 2] : last_byte;
            if ((kind == JOTTER_EVENT_HEAD || (kind == JOTTER_EVENT_END && chunked))
                && *consumed > from && data[*consumed - 1] == '\n' && before != '\r') {
                parser->event_count--;
                parser->limit = JOTTER_LIMIT_BARE_LF;
                llhttp_set_error_reason(&parser->llhttp, "bare LF");
                return HPE_USER;
            }
            llhttp_resume(&parser->llhttp);
        }
    }
    return error;
}

void jotter_parser_rebase(jotter_parser *parser, uint32_t delta) {
    parser->message_start -= delta;
    if (parser->version_end) parser->version_end -= delta;
    if (parser->method.length) parser->method.offset -= delta;
    if (parser->target.length) parser->target.offset -= delta;
    for (uint32_t i = 0; i < parser->field_count; i++) {
        /* A name's offset is set when its line begins, empty or not (`: value`). */
        parser->names[i].offset -= delta;
        if (parser->values[i].length) parser->values[i].offset -= delta;
    }
}

const char *jotter_parser_reason(const jotter_parser *parser) {
    const char *reason = llhttp_get_error_reason(&parser->llhttp);
    return reason ? reason : "";
}
