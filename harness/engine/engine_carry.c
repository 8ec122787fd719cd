/*
 * engine_carry.c - a board's carried findings (engine_carry.h): the list,
 * its counts per class, its violations and the findings counted beyond the
 * list.
 */
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_judgement.h"

#include "harness/engine/engine_types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct eng_carry {
	json_object *findings;		/* an array, never NULL */
	uint32_t counts[PC_NCLASSES];
	uint32_t viol;
	uint32_t unlisted;		/* carried findings counted but not listed */
};

int eng_carry_any(const struct eng_carry *c)
{
	return c != NULL;
}

static struct eng_carry *carry_new(json_object *findings)
{
	struct eng_carry *c = findings ? calloc(1, sizeof(*c)) : NULL;

	if (c)
		c->findings = findings;
	return c;
}

int eng_carry_add(struct eng_carry **cp, json_object *f, unsigned found_at_boot)
{
	struct eng_carry *c = *cp;

	if (!c && !(c = *cp = carry_new(json_object_new_array()))) {
		json_object_put(f);
		return -ENOMEM;
	}
	json_object_object_add(f, "acked", json_object_new_boolean(0));
	json_object_object_add(f, "violation", json_object_new_boolean(1));
	json_object_object_add(f, "found_at_boot", json_object_new_int64(found_at_boot));
	if (json_object_array_length(c->findings) < ENGINE_MAX_FINDINGS) {
		json_object_array_add(c->findings, f);
	} else {
		json_object_put(f);
		c->unlisted++;
	}
	c->counts[PC_CLS_COLLATERAL]++;
	c->viol++;
	return 0;
}

void eng_carry_take(struct eng_carry **cp, struct judge *j)
{
	struct eng_carry *c = *cp;
	size_t n;

	if (!c)
		return;
	n = json_object_array_length(c->findings);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(j->findings, json_object_get(json_object_array_get_idx(c->findings, i)));
	j->nlisted += (uint32_t)n;
	for (int i = 0; i < PC_NCLASSES; i++)
		j->counts[i] += c->counts[i];
	j->violations += c->viol;
	j->unlisted += c->unlisted;
	eng_carry_free(c);
	*cp = NULL;
}

void eng_carry_open(struct eng_carry *c, struct judge *j)
{
	j->findings = c ? c->findings : json_object_new_array();
	j->nlisted = j->findings ? (uint32_t)json_object_array_length(j->findings) : 0;
	j->unlisted = c ? c->unlisted : 0;
}

int eng_carry_close(struct eng_carry **cp, struct judge *j)
{
	struct eng_carry *c = *cp;

	if (!c && !(c = *cp = carry_new(j->findings))) {
		json_object_put(j->findings);
		j->findings = NULL;
		return -ENOMEM;
	}
	for (int i = 0; i < PC_NCLASSES; i++)
		c->counts[i] += j->counts[i];
	c->viol += j->violations;
	c->unlisted = j->unlisted;
	c->findings = j->findings;
	j->findings = NULL;
	return 0;
}

struct eng_carry *eng_carry_dup(const struct eng_carry *c, int *oom)
{
	json_object *list = NULL;
	struct eng_carry *d;

	if (!c)
		return NULL;
	if (json_object_deep_copy(c->findings, &list, NULL))
		list = NULL;
	d = carry_new(list);
	if (!d) {
		json_object_put(list);
		*oom = 1;
		return NULL;
	}
	memcpy(d->counts, c->counts, sizeof(d->counts));
	d->viol = c->viol;
	d->unlisted = c->unlisted;
	return d;
}

/* (the list, then the object: json_object_put and free take NULL) */
void eng_carry_free(struct eng_carry *c)
{
	json_object_put(c ? c->findings : NULL);
	free(c);
}
