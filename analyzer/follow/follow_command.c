/* The command a process is named by; see follow_command.h. */
#include "follow_command.h"

#include "input_files.h"
#include "process_env.h"

#include <stdio.h>
#include <string.h>

void vt_follow_command(const struct vt_process_info *info, char *buf, size_t n)
{
    if (!n)
        return;
    buf[0] = '\0';
    size_t first = vt_process_program_arg(info);
    size_t used = 0;
    for (size_t i = first; i < info->argc && used + 1 < n; i++) {
        const char *arg = info->argv[i] ? info->argv[i] : "";
        if (i == first)
            arg = vt_path_base_name(arg); /* the program's or script's name, not where it lives */
        int k = snprintf(buf + used, n - used, "%s%s", i > first ? " " : "", arg);
        if (k < 0)
            break;
        used += (size_t)k;
    }
    if (!buf[0] && info->exe)
        snprintf(buf, n, "%s", info->exe);
}
