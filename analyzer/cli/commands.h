/* The subcommands of the `vramtrace` CLI; each returns the exit status
 * (0 ok, 2 bad usage or bad input). argv[0] is the subcommand name. */
#ifndef VRAMTRACE_ANALYZER_COMMANDS_H
#define VRAMTRACE_ANALYZER_COMMANDS_H

int vt_cmd_diff(int argc, char **argv);
int vt_cmd_dump(int argc, char **argv);
int vt_cmd_export(int argc, char **argv);
int vt_cmd_fit(int argc, char **argv);
int vt_cmd_report(int argc, char **argv);
int vt_cmd_run(int argc, char **argv);
int vt_cmd_simulate(int argc, char **argv);
int vt_cmd_top(int argc, char **argv);

#endif
