/* json.c - JSON: string escaping and members into a so_sbuf, and a small reader (reports, run --json lines, package.json). */
#include "json.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void so_json_str(so_sbuf *b, const char *s)
{
    so_sbuf_printf(b, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') so_sbuf_printf(b, "\\%c", c);
        else if (c < 0x20) so_sbuf_printf(b, "\\u%04x", c);
        else so_sbuf_printf(b, "%c", c);
    }
    so_sbuf_printf(b, "\"");
}

void so_json_fstr(FILE *f, const char *s)
{
    so_sbuf b = {0};
    so_json_str(&b, s);
    fputs(b.s, f);
    free(b.s);
}

const char *so_json_fmt(char *buf, double v, int digits)
{
    if (isfinite(v)) snprintf(buf, SO_JSON_NUM_CHARS, "%.*g", digits, v);
    else snprintf(buf, SO_JSON_NUM_CHARS, "null");
    return buf;
}

/* A JSON number, or null for NaN/inf. */
void so_json_num(so_sbuf *b, double v)
{
    if (isfinite(v)) so_sbuf_printf(b, "%.6g", v);
    else so_sbuf_printf(b, "null");
}

/* One JSON member: sep (the text before the key: "", ", ", ",\n  ") "\"key\": " value. Keys are
   plain identifiers (not escaped). */
void so_json_kstr(so_sbuf *b, const char *sep, const char *key, const char *s)
{
    so_sbuf_printf(b, "%s\"%s\": ", sep, key);
    so_json_str(b, s);
}

void so_json_knum(so_sbuf *b, const char *sep, const char *key, double v)
{
    so_sbuf_printf(b, "%s\"%s\": ", sep, key);
    so_json_num(b, v);
}

/* ======================================================================================
   a small JSON reader (the optimize report, run --json lines, package.json)
   ====================================================================================== */

void so_json_free(so_json *v)
{
    if (!v) return;
    free(v->str);
    for (int i = 0; i < v->n; i++) {
        so_json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

typedef struct jp {
    const char *p, *end;
} jp;

static void jws(jp *p)
{
    while (p->p < p->end && isspace((unsigned char)*p->p)) p->p++;
}

static int jhex(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static int jstring(jp *p, char **out)
{
    if (p->p >= p->end || *p->p != '"') return -1;
    p->p++;
    so_sbuf b = {0};
    so_sbuf_printf(&b, "%s", "");
    while (p->p < p->end && *p->p != '"') {
        char c = *p->p++;
        if (c != '\\') {
            so_sbuf_printf(&b, "%c", c);
            continue;
        }
        if (p->p >= p->end) break;
        c = *p->p++;
        switch (c) {
        case 'n': so_sbuf_printf(&b, "\n"); break;
        case 't': so_sbuf_printf(&b, "\t"); break;
        case 'r': so_sbuf_printf(&b, "\r"); break;
        case 'b': so_sbuf_printf(&b, "\b"); break;
        case 'f': so_sbuf_printf(&b, "\f"); break;
        case 'u': {
            unsigned u;
            if (p->end - p->p < 4 || jhex(p->p, &u)) goto bad;
            p->p += 4;
            if (u < 0x80) so_sbuf_printf(&b, "%c", (char)u);
            else if (u < 0x800) so_sbuf_printf(&b, "%c%c", (char)(0xc0 | (u >> 6)), (char)(0x80 | (u & 0x3f)));
            else so_sbuf_printf(&b, "%c%c%c", (char)(0xe0 | (u >> 12)), (char)(0x80 | ((u >> 6) & 0x3f)), (char)(0x80 | (u & 0x3f)));
            break;
        }
        default: so_sbuf_printf(&b, "%c", c); break; /* \" \\ \/ */
        }
    }
    if (p->p >= p->end) goto bad;
    p->p++;
    *out = b.s;
    return 0;
bad:
    free(b.s);
    return -1;
}

static int jvalue(jp *p, so_json *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > 64) return -1;
    jws(p);
    if (p->p >= p->end) return -1;
    char c = *p->p;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        out->kind = obj ? SO_JSON_OBJ : SO_JSON_ARR;
        p->p++;
        jws(p);
        if (p->p < p->end && *p->p == (obj ? '}' : ']')) {
            p->p++;
            return 0;
        }
        int cap = 0;
        for (;;) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 8;
                out->items = so_xrealloc(out->items, (size_t)cap * sizeof *out->items);
                if (obj) out->keys = so_xrealloc(out->keys, (size_t)cap * sizeof *out->keys);
            }
            char *key = NULL;
            if (obj) {
                jws(p);
                if (jstring(p, &key)) return -1;
                jws(p);
                if (p->p >= p->end || *p->p != ':') {
                    free(key);
                    return -1;
                }
                p->p++;
            }
            so_json item;
            if (jvalue(p, &item, depth + 1)) {
                free(key);
                so_json_free(&item);
                return -1;
            }
            if (obj) out->keys[out->n] = key;
            out->items[out->n++] = item;
            jws(p);
            if (p->p < p->end && *p->p == ',') {
                p->p++;
                continue;
            }
            if (p->p < p->end && *p->p == (obj ? '}' : ']')) {
                p->p++;
                return 0;
            }
            return -1;
        }
    }
    if (c == '"') {
        out->kind = SO_JSON_STR;
        return jstring(p, &out->str);
    }
    if (!strncmp(p->p, "null", 4)) {
        p->p += 4;
        out->kind = SO_JSON_NULL;
        return 0;
    }
    if (!strncmp(p->p, "true", 4) || !strncmp(p->p, "false", 5)) {
        out->kind = SO_JSON_BOOL;
        out->num = c == 't';
        p->p += c == 't' ? 4 : 5;
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char *e;
        out->kind = SO_JSON_NUM;
        out->num = strtod(p->p, &e);
        if (e == p->p || e > p->end) return -1;
        p->p = e;
        return 0;
    }
    return -1;
}

/* Parses NUL-terminated text holding one JSON value. */
so_status so_json_parse(const char *text, const char *what, so_json *out)
{
    jp p = {text, text + strlen(text)};
    if (jvalue(&p, out, 0) != 0) {
        so_json_free(out);
        return so_errorf("%s: not valid JSON", what);
    }
    jws(&p);
    if (p.p != p.end) {
        so_json_free(out);
        return so_errorf("%s: trailing text after the JSON value", what);
    }
    return SO_OK;
}

const so_json *so_json_get(const so_json *o, const char *key)
{
    if (!o || o->kind != SO_JSON_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}

/* A required number (null allowed when allow_null: gives NaN). */
so_status so_json_get_num(const so_json *o, const char *key, const char *what, int allow_null, double *out)
{
    const so_json *v = so_json_get(o, key);
    if (!v) return so_errorf("%s: key '%s' is missing", what, key);
    if (v->kind == SO_JSON_NULL && allow_null) {
        *out = NAN;
        return SO_OK;
    }
    if (v->kind != SO_JSON_NUM) return so_errorf("%s: key '%s' is not a number", what, key);
    *out = v->num;
    return SO_OK;
}
