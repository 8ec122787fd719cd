/*
 * campaign_loop.h - the poll loop and each board's state machine
 * (campaign.c), and the signals that end it.
 */
#ifndef PC_HARNESS_CAMPAIGN_LOOP_H
#define PC_HARNESS_CAMPAIGN_LOOP_H

struct camp;

void camp_catch_signals(void);
int camp_stopped(void);		/* the signal that asked the loop to end, or 0 */
void camp_loop(struct camp *c);
void camp_progress(struct camp *c, int force);

#endif
