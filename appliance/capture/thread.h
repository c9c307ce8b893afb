/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Worker threads of the capture path take no signals: the application's own
 * threads (signalfd, the daemon's loop) handle them. */
#ifndef NFBOX_APPLIANCE_THREAD_H
#define NFBOX_APPLIANCE_THREAD_H

#include <pthread.h>
#include <signal.h>

/* pthread_create with every signal blocked in the new thread, named name.
 * Returns 0 or a positive errno, like pthread_create. */
static inline int thread_start_quiet(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		pthread_setname_np(*t, name);
	return err;
}

#endif
