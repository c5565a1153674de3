/* kjoule fit's output folder, replaced whole or not at all (kj_fit_out.h). */
#include "kj_fit_out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_error.h"

/* dir/name into buf; -1 when it does not fit */
static int join(char *buf, size_t len, const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	if (a + 1 + b >= len)
		return -1;
	memcpy(buf, dir, a);
	buf[a] = '/';
	memcpy(buf + a + 1, name, b + 1);
	return 0;
}

/* Remove a folder of plain files (what fit writes) and the folder itself. */
static void remove_flat(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX];
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !join(p, sizeof(p), dir, e->d_name))
			unlink(p);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* The absolute path of out_dir, existing or not (its parent must exist), into o->target. */
static int resolve(const char *out_dir, struct kj_fit_out *o)
{
	char path[PATH_MAX], parent[PATH_MAX];
	size_t n = strlen(out_dir);
	if (!n || n >= sizeof(path)) {
		kj_errorf("fit: -o '%s': not a folder name", out_dir);
		return KJ_EINVAL;
	}
	memcpy(path, out_dir, n + 1);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	struct stat st;
	if (!stat(path, &st)) {
		if (!S_ISDIR(st.st_mode)) {
			kj_errorf("fit: -o %s: exists and is not a folder", out_dir);
			return KJ_EINVAL;
		}
		if (!realpath(path, o->target)) {
			kj_errorf("fit: %s: %s", out_dir, strerror(errno));
			return KJ_EIO;
		}
		o->exists = 1;
		o->mode = st.st_mode & 07777;
	} else if (errno == ENOENT) {
		char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		if (slash == path)
			snprintf(parent, sizeof(parent), "/");
		else if (slash)
			snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
		else
			snprintf(parent, sizeof(parent), ".");
		char real[PATH_MAX];
		if (!realpath(parent, real)) {
			kj_errorf("fit: %s: the folder it goes in, %s: %s", out_dir, parent, strerror(errno));
			return KJ_EIO;
		}
		if (snprintf(o->target, sizeof(o->target), "%s/%s", strcmp(real, "/") ? real : "", base) >=
		    (int)sizeof(o->target)) {
			kj_errorf("fit: %s: path too long", out_dir);
			return KJ_EINVAL;
		}
		mode_t um = umask(0);
		umask(um);
		o->mode = 0777 & ~um;
	} else {
		kj_errorf("fit: %s: %s", out_dir, strerror(errno));
		return KJ_EIO;
	}
	if (!strcmp(o->target, "/")) {
		kj_errorf("fit: -o %s: fit replaces its output folder whole; give a folder of its own", out_dir);
		return KJ_EINVAL;
	}
	return 0;
}

int kj_fit_out_open(const char *out_dir, struct kj_fit_out *o)
{
	memset(o, 0, sizeof(*o));
	o->shown = out_dir;
	int rc = resolve(out_dir, o);
	if (rc || !o->exists)
		return rc;
	/* what the folder holds: only plain files, and a models index among them if any */
	DIR *d = opendir(o->target);
	struct dirent *e;
	char p[PATH_MAX];
	int files = 0, index = 0;
	if (!d) {
		kj_errorf("fit: %s: %s", out_dir, strerror(errno));
		return KJ_EIO;
	}
	while ((e = readdir(d))) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (join(p, sizeof(p), o->target, e->d_name) || lstat(p, &st) || !S_ISREG(st.st_mode)) {
			kj_errorf("fit: %s/%s: not a plain file; fit replaces the models folder whole and would lose "
				  "it (give a folder of its own with -o)", out_dir, e->d_name);
			closedir(d);
			return KJ_EINVAL;
		}
		files++;
		index |= !strcmp(e->d_name, "models.json");
	}
	closedir(d);
	if (files && !index) {
		kj_errorf("fit: %s holds files but no models.json: not a models folder, and fit replaces its "
			  "output folder whole (give a new or empty folder with -o)", out_dir);
		return KJ_EINVAL;
	}
	if (!index)
		return 0;
	json_error_t je;
	join(p, sizeof(p), o->target, "models.json");
	json_t *old = json_load_file(p, 0, &je);
	if (!old) {
		kj_errorf("fit: %s/models.json:%d: %s: not a models index; fit will not replace it (move it "
			  "away, or give another folder with -o)", out_dir, je.line, je.text);
		return KJ_EINVAL;
	}
	if (!json_is_object(old) || !json_is_array(json_object_get(old, "models"))) {
		kj_errorf("fit: %s/models.json: no \"models\" list: not a models index kjoule fit wrote; fit "
			  "will not replace it (move it away, or give another folder with -o)", out_dir);
		json_decref(old);
		return KJ_EINVAL;
	}
	o->old = old;
	return 0;
}

int kj_fit_out_begin(struct kj_fit_out *o)
{
	if (snprintf(o->tmp, sizeof(o->tmp), "%s.tmp-XXXXXX", o->target) >= (int)sizeof(o->tmp) || !mkdtemp(o->tmp)) {
		kj_errorf("fit: cannot make a folder beside %s to build the models in: %s", o->shown, strerror(errno));
		o->tmp[0] = '\0';
		return KJ_EIO;
	}
	if (chmod(o->tmp, o->mode)) {
		kj_errorf("fit: %s: %s", o->tmp, strerror(errno));
		return KJ_EIO;
	}
	return 0;
}

/* whether name is one of the files the dropped entries name (their "model" and "svg") */
static int dropped_file(json_t *dropped, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(dropped, i, e) {
		const char *m = json_string_value(json_object_get(e, "model"));
		const char *s = json_string_value(json_object_get(e, "svg"));
		if ((m && !strcmp(m, name)) || (s && !strcmp(s, name)))
			return 1;
	}
	return 0;
}

/* from into to, byte for byte */
static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[65536];
	size_t n;
	int rc = in && out ? 0 : -1;
	while (!rc && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		rc = fwrite(buf, 1, n, out) == n ? 0 : -1;
	if (in && ferror(in))
		rc = -1;
	if (in)
		fclose(in);
	if (out && fclose(out))
		rc = -1;
	return rc;
}

/* the earlier folder's files that the new one neither has nor replaces, into it */
static int carry(struct kj_fit_out *o, json_t *dropped)
{
	DIR *d = opendir(o->target);
	struct dirent *e;
	char from[PATH_MAX], to[PATH_MAX];
	int rc = 0;
	if (!d) {
		kj_errorf("fit: %s: %s", o->shown, strerror(errno));
		return KJ_EIO;
	}
	while (!rc && (e = readdir(d))) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "models.json") ||
		    dropped_file(dropped, e->d_name))
			continue;
		if (join(from, sizeof(from), o->target, e->d_name) || join(to, sizeof(to), o->tmp, e->d_name)) {
			rc = KJ_EINVAL;
		} else if (lstat(to, &st) == 0) {
			continue; /* written by this fit */
		} else if (link(from, to) && copy_file(from, to)) {
			kj_errorf("fit: cannot carry %s/%s into the new models folder: %s", o->shown, e->d_name,
				  strerror(errno));
			rc = KJ_EIO;
		}
	}
	closedir(d);
	return rc;
}

/* the folder holding path's entries, synced so the renames outlive a crash (best effort) */
static void sync_parent(const char *path)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash)
		return;
	if (slash == parent)
		slash[1] = '\0'; /* "/x": the root */
	else
		*slash = '\0';
	int fd = open(parent, O_RDONLY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int kj_fit_out_commit(struct kj_fit_out *o, json_t *dropped)
{
	char aside[PATH_MAX];
	int rc = 0;
	if (o->exists && (rc = carry(o, dropped)))
		goto out;
	if (!o->exists) {
		if (rename(o->tmp, o->target)) {
			kj_errorf("fit: cannot put the models in place as %s: %s", o->shown, strerror(errno));
			rc = KJ_EIO;
		}
		goto out;
	}
	/* the earlier folder aside (onto an empty folder of a fresh name), the new one in */
	if (snprintf(aside, sizeof(aside), "%s.old-XXXXXX", o->target) >= (int)sizeof(aside) || !mkdtemp(aside)) {
		kj_errorf("fit: cannot make a folder beside %s to move the earlier models to: %s", o->shown,
			  strerror(errno));
		rc = KJ_EIO;
		goto out;
	}
	if (rename(o->target, aside)) {
		kj_errorf("fit: cannot move the earlier %s aside: %s", o->shown, strerror(errno));
		rmdir(aside);
		rc = KJ_EIO;
		goto out;
	}
	if (rename(o->tmp, o->target)) {
		int err = errno;
		if (rename(aside, o->target))
			kj_errorf("fit: cannot put the models in place as %s (%s), nor the earlier ones back: they "
				  "are in %s", o->shown, strerror(err), aside);
		else
			kj_errorf("fit: cannot put the models in place as %s: %s (the earlier ones are kept)",
				  o->shown, strerror(err));
		rc = KJ_EIO;
		goto out;
	}
	remove_flat(aside);
out:
	if (!rc) {
		o->tmp[0] = '\0';
		sync_parent(o->target);
	}
	kj_fit_out_abort(o);
	return rc;
}

void kj_fit_out_abort(struct kj_fit_out *o)
{
	if (o->tmp[0])
		remove_flat(o->tmp);
	o->tmp[0] = '\0';
	json_decref(o->old);
	o->old = NULL;
}
