/*
 * plan.h - `powercut plan`: how many cuts a qualification target needs
 * (harness/report/qualify.h, docs/results.md#confidence-bounds).
 */
#ifndef PC_PLAN_H
#define PC_PLAN_H

int cmd_plan(int argc, char **argv);

#endif
