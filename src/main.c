/* main.c - the superopt command line: optimize, run, generate, verify, bench, inspect. */
#include <stdio.h>
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: superopt MODEL.onnx [options] | run | generate | verify | bench | inspect\n");
        return 2;
    }
    (void)argv;
    return 0;
}
