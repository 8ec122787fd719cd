/*
 * region_int.h - what region.c (claim, open, prepare) and region_scan.c (the
 * scan) share; not for other files.
 */
#ifndef PC_AGENT_REGION_INT_H
#define PC_AGENT_REGION_INT_H

#include <stddef.h>

#define ALIGN 4096		/* the alignment of the region's I/O (O_DIRECT) */
#define SCAN_CHUNK (1u << 20)	/* the scan's largest read; prepare writes in chunks as large */

/* Zeroed, page-aligned memory, every page mapped in at once (MAP_POPULATE);
 * NULL when it cannot be had. Free with region_mem_unmap(). */
void *region_mem_map(size_t len);
void region_mem_unmap(void *p, size_t len);

#endif
