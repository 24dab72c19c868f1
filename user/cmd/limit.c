// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* limit, allow, deny, policy: editing the policy of an attached interface.
 * Every edit is validated whole, then committed to the inactive slot and
 * switched to atomically; a rejected edit changes nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core.h"
#include "rule.h"

#define WHY_LEN 512

static int policy_end(struct sluice_maps *m, struct policy *p, bool commit)
{
	int err = commit ? policy_commit(m, p) : 0;

	free(p);
	maps_close(m);
	return err;
}

/* One live edit: limit set/default/del, allow, deny. */
/* A --cluster rule with no agent to share it: say what this host does. */
static void cluster_warn(const struct sluice_maps *m)
{
	struct sluice_cluster_state st;

	if (cluster_state_read(m, &st) || cluster_agent_alive(&st, mono_now_ns()))
		return;
	log_event(LOG_WARNING, "no cluster agent runs on %s: this host applies the whole limit "
		  "(limit / 1) by itself until 'sluice cluster join'", m->iface);
}

int rule_edit_run(const struct cli_cmd *c, struct cli_args *a)
{
	char why[WHY_LEN], label[128], words[RULE_TEXT_MAX];
	struct sluice_maps m;
	struct policy *p;
	struct rule r, *old;
	int err;

	if (rule_from_args(c, a, &r, why, sizeof(why)))
		return usage_err("%s", why);
	err = open_policy(&m, &p, true);
	if (err)
		return err;
	rule_label(&r, c->id == RULE_DEFAULT, label, sizeof(label));
	switch (c->id) {
	case RULE_NEW_SOURCES:
		p->new_sources = r;
		break;
	case RULE_DEFAULT:
		r.index = SLUICE_POLICY_DEFAULT;
		p->def = r;
		break;
	case RULE_DEL:
		old = policy_find_rule(p, &r);
		if (!old) {
			policy_end(&m, p, false);
			return usage_err("no rule for %s: see 'sluice limit list'", label);
		}
		*old = p->rules[--p->n];
		break;
	default:
		if (policy_put(p, &r, why, sizeof(why))) {
			policy_end(&m, p, false);
			return usage_err("%s", why);
		}
	}
	if (r.cluster && c->id != RULE_DEL)
		cluster_warn(&m);
	err = policy_end(&m, p, true);
	if (err || opts.json)
		return err;
	if (c->id == RULE_DEL) {
		printf("%s: rule deleted\n", label);
	} else if (c->id == RULE_NEW_SOURCES) {
		budget_format(&r, words, sizeof(words));
		printf("%s\n", words);
	} else {
		rule_format(&r, c->id == RULE_DEFAULT, words, sizeof(words));
		printf("%s\n", words);
	}
	return 0;
}

static void list_one_json(struct json *j, const char *cidr, const struct rule *r, bool is_default,
			  const struct sluice_policy_counter *pc)
{
	json_obj_open(j, NULL);
	json_str(j, "cidr", cidr);
	json_str(j, "action", action_name(r->action));
	json_u64(j, "rate", r->rate);
	json_u64(j, "burst", r->burst);
	rule_json_fields(j, r, is_default);
	json_u64(j, "passed", pc->pass_packets);
	json_u64(j, "dropped", pc->drop_packets);
	/* Under --monitor: of the passed, those enforcing would have dropped. */
	json_u64(j, "would_drop", pc->monitor_packets);
	json_u64(j, "would_drop_bytes", pc->monitor_bytes);
	json_obj_close(j);
}

static void list_one_text(const char *cidr, const struct rule *r,
			  const struct sluice_policy_counter *pc)
{
	char rate[40] = "-", burst[24] = "-", match[64], more[96] = "", ban[24];

	rule_match_words(&r->match, match, sizeof(match));
	if (r->action == SLUICE_ACT_LIMIT) {
		rule_rate_words(r, rate, sizeof(rate));
		if (r->unit != SLUICE_UNIT_PACKETS) {
			size_t n = strlen(rate);

			snprintf(rate + n, sizeof(rate) - n, " %s", unit_name(r->unit));
		}
		snprintf(burst, sizeof(burst), "%llu", (unsigned long long)r->burst);
		if (r->algo != SLUICE_ALGO_TOKEN_BUCKET) {
			duration_words(r->window_ns, ban, sizeof(ban));
			snprintf(more, sizeof(more), "%s %s", algo_name(r->algo), ban);
		}
		if (r->per != SLUICE_PER_SOURCE) {
			size_t n = strlen(more);

			if (r->per == SLUICE_PER_PREFIX)
				snprintf(more + n, sizeof(more) - n, "%sper /%u", n ? " " : "",
					 r->per_len);
			else
				snprintf(more + n, sizeof(more) - n, "%sper rule", n ? " " : "");
		}
		if (r->ban_ns) {
			size_t n = strlen(more);

			duration_words(r->ban_ns, ban, sizeof(ban));
			snprintf(more + n, sizeof(more) - n, "%sban %s", n ? " " : "", ban);
			n = strlen(more);
			if (rule_is_request(r))
				snprintf(more + n, sizeof(more) - n, " after %u", r->ban_after);
		}
		if (r->monitor) {
			size_t n = strlen(more);

			snprintf(more + n, sizeof(more) - n, "%smonitor (would drop %llu)",
				 n ? " " : "", (unsigned long long)pc->monitor_packets);
		}
		if (r->cluster) {
			size_t n = strlen(more);

			snprintf(more + n, sizeof(more) - n, "%scluster", n ? " " : "");
		}
	}
	printf("%-31s %-22s %-6s %14s %10s %14llu %14llu  %s\n", cidr, *match ? match : "-",
	       action_name(r->action), rate, burst, (unsigned long long)pc->pass_packets,
	       (unsigned long long)pc->drop_packets, *more ? more : "-");
}

static int limit_list(const struct cli_cmd *c, struct cli_args *a)
{
	struct sluice_policy_counter pc;
	struct sluice_maps m;
	struct policy *p;
	struct json j;
	char cidr[SLUICE_CIDR_STR_MAX];
	int err;

	(void)c;
	(void)a;
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	qsort(p->rules, p->n, sizeof(p->rules[0]), rule_cmp);

	if (opts.json) {
		json_begin(&j, stdout);
		json_arr_open(&j, NULL);
	} else {
		printf("%-31s %-22s %-6s %14s %10s %14s %14s  %s\n", "CIDR", "MATCH", "ACTION",
		       "RATE", "BURST", "PASSED", "DROPPED", "OPTIONS");
	}
	for (unsigned int i = 0; i <= p->n && !err; i++) {
		const struct rule *r = i == 0 ? &p->def : &p->rules[i - 1];

		err = read_policy_counter(&m, r->index, &pc);
		if (err)
			break;
		if (i == 0)
			snprintf(cidr, sizeof(cidr), "default");
		else
			rule_cidr_str(r, cidr, sizeof(cidr));
		if (opts.json)
			list_one_json(&j, cidr, r, i == 0, &pc);
		else
			list_one_text(cidr, r, &pc);
	}
	if (opts.json) {
		json_arr_close(&j);
		json_end(&j);
	} else if (!err) {
		char words[RULE_TEXT_MAX];

		budget_format(&p->new_sources, words, sizeof(words));
		printf("new sources: %s\n", words + strlen("limit new-sources "));
	}
	free(p);
	maps_close(&m);
	return err;
}

static const struct cli_cmd limit_list_cmd = {
	.name = "list", .path = "limit list", .json = true, .run = limit_list,
	.help = "Lists the default and every rule, most general first, with their packet counts.",
};

static const struct cli_cmd *const limit_cmds[] = {
	&rule_cmd_default, &rule_cmd_set, &rule_cmd_del, &rule_cmd_new_sources, &limit_list_cmd,
	NULL,
};

const struct cli_cmd limit_obj = {
	.name = "limit", .path = "limit", .sub = limit_cmds,
	.help = "Rates are N per second, N/s, N/m or N/h: --rate 600/m is 10 per second.\n"
		"See sluice(8), \"RULES AND ALGORITHMS\", for matches, --per, --ban and --monitor.",
};

