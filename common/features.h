/*
 * features.h - which optional libraries this build has, as one string for
 * --version: decided at build time by the Makefile from pkg-config
 * (PC_HAVE_BLKID, PC_HAVE_URING, PC_GPIOD_API=1|2), so a build that lacks one
 * says so instead of failing later ("this agent was built without libblkid").
 */
#ifndef PC_FEATURES_H
#define PC_FEATURES_H

#ifdef PC_HAVE_BLKID
#define PC_FEAT_BLKID "libblkid yes"
#else
#define PC_FEAT_BLKID "libblkid no (PARTLABEL= cannot be resolved)"
#endif
#ifdef PC_HAVE_URING
#define PC_FEAT_URING "liburing yes"
#else
#define PC_FEAT_URING "liburing no (the async fua mode is not supported)"
#endif
#define PC_FEAT_STR_(x) #x
#define PC_FEAT_STR(x) PC_FEAT_STR_(x)
#ifdef PC_GPIOD_API
#define PC_FEAT_GPIOD "libgpiod v" PC_FEAT_STR(PC_GPIOD_API)
#else
#define PC_FEAT_GPIOD "libgpiod no (the gpio relay is refused)"
#endif

/* the agent's libraries; the host links the agent's code (crash-states) too */
#define PC_AGENT_FEATURES PC_FEAT_BLKID ", " PC_FEAT_URING
#define PC_HOST_FEATURES PC_FEAT_GPIOD ", " PC_AGENT_FEATURES

#endif
