/*
 * writer.h - the results writer's thread (writer.c), started and stopped by
 * results_open() and results_close(); the rest of results.h's writing calls
 * (results_event, results_sync, results_verdict, ...) are writer.c's too.
 */
#ifndef PC_HARNESS_RESULTS_WRITER_H
#define PC_HARNESS_RESULTS_WRITER_H

#include <stddef.h>

struct results;

/* 0, or -errno with err said. */
int results_writer_start(struct results *r, char *err, size_t errlen);
/* Flush (unless a sync failed), stop and free the thread. Idempotent. */
void results_writer_stop(struct results *r);

#endif
