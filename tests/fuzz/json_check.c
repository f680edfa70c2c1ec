/* Strict JSON validation; see json_check.h. Recursive descent with a depth
 * limit, so hostile nesting cannot exhaust the stack. */
#include "json_check.h"

#include <string.h>

#define MAX_DEPTH 256

struct parser {
    const unsigned char *s;
    size_t len, pos;
    bool bad;
};

static bool fail(struct parser *p)
{
    p->bad = true;
    return false;
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
        p->pos++;
}

static bool literal(struct parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p);
    p->pos += n;
    return true;
}

/* One UTF-8 sequence (shortest form, no surrogates, <= U+10FFFF). */
static bool utf8_char(struct parser *p)
{
    unsigned char c = p->s[p->pos];
    size_t extra;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        extra = 1;
    else if (c >= 0xe0 && c <= 0xef) {
        extra = 2;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        extra = 3;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return fail(p);
    if (p->len - p->pos <= extra)
        return fail(p);
    for (size_t i = 1; i <= extra; i++) {
        unsigned char b = p->s[p->pos + i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
            return fail(p);
    }
    p->pos += extra + 1;
    return true;
}

static bool string(struct parser *p)
{
    p->pos++; /* the opening quote */
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            return true;
        }
        if (c < 0x20)
            return fail(p);
        if (c == '\\') {
            if (++p->pos >= p->len)
                return fail(p);
            c = p->s[p->pos];
            if (c == 'u') {
                if (p->len - p->pos < 5)
                    return fail(p);
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p->s[p->pos + i]) || !p->s[p->pos + i])
                        return fail(p);
                p->pos += 5;
            } else if (strchr("\"\\/bfnrt", c) && c) {
                p->pos++;
            } else {
                return fail(p);
            }
        } else if (c < 0x80) {
            p->pos++;
        } else if (!utf8_char(p)) {
            return false;
        }
    }
    return fail(p);
}

static bool digits(struct parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    return p->pos > start || fail(p);
}

static bool number(struct parser *p)
{
    if (p->s[p->pos] == '-')
        p->pos++;
    if (p->pos < p->len && p->s[p->pos] == '0')
        p->pos++;
    else if (!digits(p))
        return false;
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (!digits(p))
            return false;
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        if (!digits(p))
            return false;
    }
    return true;
}

static bool value(struct parser *p, int depth);

/* An object or an array: open and close are the brackets. */
static bool container(struct parser *p, int depth, char close, bool keys)
{
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == (unsigned char)close) {
        p->pos++;
        return true;
    }
    for (;;) {
        if (keys) {
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"' || !string(p))
                return fail(p);
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return fail(p);
            p->pos++;
        }
        if (!value(p, depth + 1))
            return false;
        skip_ws(p);
        if (p->pos >= p->len)
            return fail(p);
        if (p->s[p->pos] == (unsigned char)close) {
            p->pos++;
            return true;
        }
        if (p->s[p->pos] != ',')
            return fail(p);
        p->pos++;
    }
}

static bool value(struct parser *p, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(p);
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p);
    switch (p->s[p->pos]) {
    case '{':
        return container(p, depth, '}', true);
    case '[':
        return container(p, depth, ']', false);
    case '"':
        return string(p);
    case 't':
        return literal(p, "true");
    case 'f':
        return literal(p, "false");
    case 'n':
        return literal(p, "null");
    default:
        return number(p);
    }
}

bool vt_json_check(const char *text, size_t len, size_t *bad_at)
{
    struct parser p = {(const unsigned char *)text, len, 0, false};
    bool ok = value(&p, 0);
    if (ok) {
        skip_ws(&p);
        ok = p.pos == len;
    }
    if (!ok && bad_at)
        *bad_at = p.pos;
    return ok;
}
