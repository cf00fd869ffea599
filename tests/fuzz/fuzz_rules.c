/* fuzz_rules.c - libFuzzer target: so_rules_parse on arbitrary text; clean one-line errors, and every
   accepted rule must survive format -> parse unchanged. */
#include <stdint.h>
#include <stdlib.h>

#include "../../rules/rule.h"
#include "fuzz_common.h"

#define FUZZ_PATH "fuzz.rules"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    so_ruleset rs = {0};
    if (so_rules_parse(FUZZ_PATH, (const char *)data, size, &rs) != SO_OK) {
        fuzz_check_message(FUZZ_PATH ":");
        so_ruleset_free(&rs);
        return 0;
    }
    for (int32_t i = 0; i < rs.n_rules; i++) {
        char *text = so_rule_format(&rs.rules[i]);
        so_ruleset again = {0};
        if (so_rules_parse("formatted.rules", text, strlen(text), &again) != SO_OK) {
            fprintf(stderr, "fuzz: formatted rule %d does not parse: %s\n%s\n", (int)i + 1, so_error(), text);
            abort();
        }
        if (again.n_rules != 1 || !so_rule_eq(&rs.rules[i], &again.rules[0])) {
            fprintf(stderr, "fuzz: rule %d changes through format -> parse:\n%s\n", (int)i + 1, text);
            abort();
        }
        so_ruleset_free(&again);
        free(text);
    }
    so_ruleset_free(&rs);
    return 0;
}
