/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A revision of a group's policy as one etcd value (bundle.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "lib/fingerprint.h"
#include "fleet/bundle.h"
#include "fleet/etcd.h"

#define BUNDLE_FORMAT 1

void fleet_bundle_free(struct fleet_bundle *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->files[i].name);
		free(b->files[i].data);
	}
	free(b->files);
	free(b->by);
	for (size_t i = 0; i < b->ncanaries; i++)
		free(b->canaries[i]);
	memset(b, 0, sizeof(*b));
}

bool fleet_bundle_names(const struct fleet_bundle *b, const char *node)
{
	for (size_t i = 0; node && i < b->ncanaries; i++)
		if (!strcmp(b->canaries[i], node))
			return true;
	return false;
}

/* A name a node may write under its revision's folder: relative, no "..",
 * no empty part. */
static bool name_ok(const char *name)
{
	const char *p = name;

	if (!*name || *name == '/' || strlen(name) > 512)
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (!n || (n == 2 && !strncmp(p, "..", 2)) || (n == 1 && *p == '.'))
			return false;
		p += n;
		if (*p)
			p++;
	}
	return true;
}

int fleet_bundle_from_policy(const struct policy *p, const char *path, struct fleet_bundle *out, struct diags *d)
{
	_cleanup_free_ char *copy = strdup(path);
	const char *dir = copy ? dirname(copy) : NULL;
	struct fleet_bundle b = { 0 };
	size_t n = 0, dl;
	int r;

	if (!dir)
		return -ENOMEM;
	dl = strlen(dir);
	for (const struct source *s = p->sources.head; s; s = s->next)
		n++;
	if (!(b.files = calloc(n, sizeof(*b.files))))
		return -ENOMEM;
	b.n = n;
	/* the loader keeps its sources newest first: the policy goes first */
	for (const struct source *s = p->sources.head; s; s = s->next) {
		struct fleet_file *f = &b.files[--n];
		const char *rel = s->name;

		if (!strcmp(dir, ".") && s->name[0] != '/')
			rel = s->name;
		else if (!strncmp(s->name, dir, dl) && s->name[dl] == '/')
			rel = s->name + dl + 1;
		else
			rel = NULL;
		if (!rel || !name_ok(rel)) {
			diag_fail(d, -EINVAL,
				  "%s: a fleet's policy takes its set files from its own folder (%s): move it there "
				  "and name it relative to the policy",
				  s->name, dir);
			fleet_bundle_free(&b);
			return -EINVAL;
		}
		f->name = strdup(rel);
		f->data = malloc(s->len + 1);
		if (!f->name || !f->data) {
			fleet_bundle_free(&b);
			return -ENOMEM;
		}
		memcpy(f->data, s->text, s->len);
		f->data[s->len] = '\0';
		f->len = s->len;
	}
	if ((r = fingerprint_relative(p->sources.head, strcmp(dir, ".") ? dir : "", b.fingerprint)) < 0) {
		fleet_bundle_free(&b);
		return r;
	}
	b.at = time(NULL);
	*out = b;
	return 0;
}

char *fleet_bundle_encode(const struct fleet_bundle *b, size_t *len)
{
	json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:[], s:[]}", "format", BUNDLE_FORMAT, "fingerprint",
			      b->fingerprint, "by", b->by ? b->by : "", "at", (json_int_t)b->at, "files", "canaries");
	char *text;

	if (!o)
		return NULL;
	for (size_t i = 0; i < b->n; i++) {
		_cleanup_free_ char *data = etcd_b64_encode(b->files[i].data, b->files[i].len);

		if (!data || json_array_append_new(json_object_get(o, "files"),
						   json_pack("{s:s, s:s}", "name", b->files[i].name, "data", data)) < 0)
			return json_decref(o), NULL;
	}
	for (size_t i = 0; i < b->ncanaries; i++)
		json_array_append_new(json_object_get(o, "canaries"), json_string(b->canaries[i]));
	if (b->ncanaries)
		json_object_set_new(o, "confirm", json_integer(b->confirm_s));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (text)
		*len = strlen(text);
	return text;
}

static int decode_files(const json_t *files, struct fleet_bundle *b, char *why, size_t wlen)
{
	if (!json_array_size(files)) {
		snprintf(why, wlen, "it holds no policy");
		return -EINVAL;
	}
	if (!(b->files = calloc(json_array_size(files), sizeof(*b->files))))
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(files); i++) {
		const json_t *f = json_array_get(files, i);
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *data = json_string_value(json_object_get(f, "data"));
		struct fleet_file *x = &b->files[b->n];

		if (!name || !data || !name_ok(name)) {
			snprintf(why, wlen, "file %zu: %s", i + 1,
				 name ? "a name outside its folder" : "no name or data");
			return -EINVAL;
		}
		if (!(x->name = strdup(name)) || !(x->data = etcd_b64_decode(data, &x->len))) {
			free(x->name);
			snprintf(why, wlen, "file %s: its data is not base64", name);
			return -EINVAL;
		}
		b->n++;
	}
	return 0;
}

int fleet_bundle_decode(const char *text, size_t len, struct fleet_bundle *out, char *why, size_t wlen)
{
	struct fleet_bundle b = { 0 };
	json_error_t je;
	json_t *o = json_loadb(text, len, 0, &je);
	const char *fp = json_string_value(json_object_get(o, "fingerprint"));
	const json_t *can = json_object_get(o, "canaries");
	int r;

	if (!o || json_integer_value(json_object_get(o, "format")) != BUNDLE_FORMAT || !fp || strlen(fp) != 64) {
		snprintf(why, wlen, "not a policy revision of nfbox (format %d)", BUNDLE_FORMAT);
		json_decref(o);
		return -EINVAL;
	}
	snprintf(b.fingerprint, sizeof(b.fingerprint), "%s", fp);
	b.by = strdup(json_string_value(json_object_get(o, "by")) ? json_string_value(json_object_get(o, "by")) : "");
	b.at = json_integer_value(json_object_get(o, "at"));
	b.confirm_s = (uint32_t)json_integer_value(json_object_get(o, "confirm"));
	for (size_t i = 0; i < json_array_size(can) && i < FLEET_MAX_CANARIES; i++)
		if (json_string_value(json_array_get(can, i)))
			b.canaries[b.ncanaries++] = strdup(json_string_value(json_array_get(can, i)));
	r = decode_files(json_object_get(o, "files"), &b, why, wlen);
	json_decref(o);
	if (r < 0) {
		fleet_bundle_free(&b);
		return r;
	}
	*out = b;
	return 0;
}

static int write_all(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t k = write(fd, data + off, len - off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		off += (size_t)k;
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		return -errno;
	return 0;
}

/* The folders of a relative name, made under dir. */
static int make_parents(const char *dir, const char *name)
{
	char path[PATH_MAX];

	for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(path, sizeof(path), "%s/%.*s", dir, (int)(p - name), name);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int fleet_bundle_write(const struct fleet_bundle *b, const char *dir, char *path, size_t plen)
{
	char file[PATH_MAX];
	int r;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < b->n; i++) {
		if ((r = make_parents(dir, b->files[i].name)) < 0)
			return r;
		snprintf(file, sizeof(file), "%s/%s", dir, b->files[i].name);
		if ((r = write_all(file, b->files[i].data, b->files[i].len)) < 0)
			return r;
	}
	snprintf(path, plen, "%s/%s", dir, b->files[0].name);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int fleet_remove_tree(const char *dir)
{
	return nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}
