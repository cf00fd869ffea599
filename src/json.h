/* json.h - JSON: escaped strings and members written into a so_sbuf, and a small reader. */
#ifndef SO_JSON_H
#define SO_JSON_H

#include "common.h"

/* Writers. so_json_str: a quoted, escaped string (NULL prints ""); so_json_num: a number, or null
   for NaN/inf; so_json_kstr/knum: one member, sep (the text before the key: "", ", ", ",\n  ")
   then "key": value. Keys are plain identifiers (not escaped). */
void so_json_str(so_sbuf *b, const char *s);
void so_json_num(so_sbuf *b, double v);
void so_json_kstr(so_sbuf *b, const char *sep, const char *key, const char *s);
void so_json_knum(so_sbuf *b, const char *sep, const char *key, double v);
/* v as JSON number text into buf (SO_JSON_NUM_CHARS chars): `digits` significant digits, or
   "null" for NaN/inf (JSON has no such numbers). Returns buf, for printf's %s. */
#define SO_JSON_NUM_CHARS 32
const char *so_json_fmt(char *buf, double v, int digits);
/* so_json_str written to a stream. */
void so_json_fstr(FILE *f, const char *s);

/* A parsed JSON value (tree); every pointer malloc'd and owned by the value. */
typedef enum so_json_kind { SO_JSON_NULL, SO_JSON_BOOL, SO_JSON_NUM, SO_JSON_STR, SO_JSON_ARR, SO_JSON_OBJ } so_json_kind;

typedef struct so_json {
    so_json_kind kind;
    double num;        /* SO_JSON_NUM; SO_JSON_BOOL: 0/1 */
    char *str;         /* SO_JSON_STR, malloc'd */
    int n;             /* SO_JSON_ARR, SO_JSON_OBJ: items */
    char **keys;       /* SO_JSON_OBJ, malloc'd */
    struct so_json *items;  /* SO_JSON_ARR, SO_JSON_OBJ, malloc'd */
} so_json;

/* Frees what v owns (not v itself). */
void so_json_free(so_json *v);
/* Parses text into *out (caller frees with so_json_free); on failure a message naming `what`. */
so_status so_json_parse(const char *text, const char *what, so_json *out);
/* Member `key` of object o, or NULL. */
const so_json *so_json_get(const so_json *o, const char *key);
/* Number member `key` of o into *out; allow_null: null reads as NaN. Message names `what`. */
so_status so_json_get_num(const so_json *o, const char *key, const char *what, int allow_null, double *out);

#endif
