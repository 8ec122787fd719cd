/*
 * report_crash.h - the crash states `powercut crash-states` checked, as
 * every report writer shows them (report_crash.c, docs/crash-states.md):
 * per board and write mode, from crash-states.jsonl of each results folder.
 */
#ifndef PC_HARNESS_REPORT_CRASH_H
#define PC_HARNESS_REPORT_CRASH_H

#include <stdio.h>

#include <json-c/json.h>

#include "harness/report/report_model.h"

/* A section in fmt (text, md or html); nothing when no folder has the file. 0 or -errno. */
int rep_crash_print(const struct rep *r, FILE *out, enum report_format fmt);
/* The member "crash_states" of the JSON document; none when no folder has the file. 0 or -ENOMEM. */
int rep_crash_json(const struct rep *r, json_object *doc);

#endif
