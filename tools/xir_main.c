/* xir_main.c — the `xir` command (placeholder until the subcommands land). */
#include <stdio.h>
int main(int argc, char **argv) {
  (void)argc; (void)argv;
  puts("xir: usage: xir <command> [--help]");
  return 0;
}
