/* test_io.c - output files (atomic replacement, devices and pipes written straight, symlinks, temporaries removed on SIGINT/SIGTERM), input files (non-regular refused without blocking, size bound) and the --max-memory total: issue 20 items 3, 8, 9, 10. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/so_test_io_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* dir is ours: mkdtemp's fixed pattern */
    return system(cmd) == 0 ? 0 : -1;
}

static void pathf(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = 0;
    fclose(f);
}

/* No "*.tmp.*" left in the test directory. */
static void assert_no_tmp(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".tmp.")) fail_msg("temporary left behind: %s", de->d_name);
    closedir(d);
}

static so_status write_text(const char *path, const char *text)
{
    return so_write_file_atomic(path, text, strlen(text));
}

/* New paths and regular files: written through a temporary and renamed; the replaced file's
   permission bits are kept. */
static void test_regular_and_new(void **state)
{
    (void)state;
    char p[128], buf[64];
    struct stat sb;
    pathf(p, sizeof p, "new.txt");
    assert_int_equal(write_text(p, "one"), SO_OK);
    slurp(p, buf, sizeof buf);
    assert_string_equal(buf, "one");
    assert_int_equal(chmod(p, 0640), 0);
    assert_int_equal(write_text(p, "two"), SO_OK);
    slurp(p, buf, sizeof buf);
    assert_string_equal(buf, "two");
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0640);
    assert_no_tmp();
    /* a failed write (ok = 0) leaves the old file and no temporary */
    so_atomic a;
    assert_int_equal(so_atomic_open(&a, p, "w"), SO_OK);
    fputs("half", a.f);
    assert_int_equal(so_atomic_commit(&a, p, 0), SO_ERR_IO);
    slurp(p, buf, sizeof buf);
    assert_string_equal(buf, "two");
    assert_no_tmp();
}

/* A symlink to a regular file: the target is replaced, the link stays a link. A dangling link
   and a directory are refused with a message naming the path. */
static void test_symlinks_and_dirs(void **state)
{
    (void)state;
    char target[128], link[128], dangling[128], buf[64];
    struct stat sb;
    pathf(target, sizeof target, "target.txt");
    pathf(link, sizeof link, "link.txt");
    pathf(dangling, sizeof dangling, "dangling.txt");
    assert_int_equal(write_text(target, "old"), SO_OK);
    assert_int_equal(symlink("target.txt", link), 0);
    assert_int_equal(write_text(link, "new"), SO_OK);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    slurp(target, buf, sizeof buf);
    assert_string_equal(buf, "new");
    assert_int_equal(symlink("nowhere/x", dangling), 0);
    assert_int_equal(write_text(dangling, "x"), SO_ERR_IO);
    assert_non_null(strstr(so_error(), dangling));
    assert_non_null(strstr(so_error(), "symbolic link"));
    assert_int_equal(write_text(dir, "x"), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "is a directory"));
    assert_no_tmp();
}

/* Character devices are written straight and stay devices: copies of /dev/null and /dev/full
   made with mknod (root only; the real /dev/null is never the target of a test write). A write
   to the /dev/full copy fails with ENOSPC and says so. */
static void test_char_devices(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("not root: mknod copies of /dev/null, /dev/full skipped\n");
        skip();
    }
    char null[128], full[128];
    struct stat sb;
    pathf(null, sizeof null, "null");
    pathf(full, sizeof full, "full");
    assert_int_equal(mknod(null, S_IFCHR | 0666, makedev(1, 3)), 0);
    assert_int_equal(mknod(full, S_IFCHR | 0666, makedev(1, 7)), 0);
    assert_int_equal(write_text(null, "discarded"), SO_OK);
    assert_int_equal(lstat(null, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    assert_int_equal(write_text(full, "no room"), SO_ERR_IO);
    assert_non_null(strstr(so_error(), full));
    assert_non_null(strstr(so_error(), strerror(ENOSPC)));
    assert_int_equal(lstat(full, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    /* a symlink to the device: written through, link and device unchanged */
    char link[128];
    pathf(link, sizeof link, "null.link");
    assert_int_equal(symlink(null, link), 0);
    assert_int_equal(write_text(link, "x"), SO_OK);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(lstat(null, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    assert_no_tmp();
}

/* A FIFO with a reader receives the bytes straight (and stays a FIFO); one without a reader is
   refused at once instead of blocking. */
static void test_fifo_output(void **state)
{
    (void)state;
    char fifo[128];
    struct stat sb;
    pathf(fifo, sizeof fifo, "out.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20); /* a hang fails the test instead of stalling make test */
    assert_int_equal(write_text(fifo, "x"), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "no reader"));
    int fd = open(fifo, O_RDONLY | O_NONBLOCK); /* the reader */
    assert_true(fd >= 0);
    assert_int_equal(write_text(fifo, "through the pipe"), SO_OK);
    char buf[64] = {0};
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    alarm(0);
    assert_int_equal(k, (ssize_t)strlen("through the pipe"));
    assert_string_equal(buf, "through the pipe");
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_no_tmp();
}

/* SIGINT / SIGTERM while an output is being written: the child is killed by the signal (default
   action re-raised) and its temporary is gone; the old file is untouched. */
static void test_signal_removes_tmp(void **state)
{
    (void)state;
    const int sigs[2] = {SIGINT, SIGTERM};
    char p[128], buf[64];
    pathf(p, sizeof p, "sig.txt");
    assert_int_equal(write_text(p, "before"), SO_OK);
    for (int k = 0; k < 2; k++) {
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            so_atomic a;
            if (so_atomic_open(&a, p, "w") != SO_OK) _exit(3);
            fputs("partial", a.f);
            fflush(a.f);
            struct stat sb;
            char c = stat(a.tmp, &sb) == 0 ? 'y' : 'n'; /* the temporary exists */
            if (write(pfd[1], &c, 1) != 1) _exit(4);
            raise(sigs[k]);
            _exit(5); /* not reached: the handler re-raises with the default action */
        }
        close(pfd[1]);
        char c = 0;
        assert_int_equal(read(pfd[0], &c, 1), 1);
        close(pfd[0]);
        assert_int_equal(c, 'y');
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[k]);
        assert_no_tmp();
        slurp(p, buf, sizeof buf);
        assert_string_equal(buf, "before");
    }
}

/* Inputs that must be regular files: a FIFO (no writer) is refused without blocking, a device
   and a directory too; the size bound refuses a larger file. */
static void test_input_files(void **state)
{
    (void)state;
    char fifo[128], p[128];
    char *buf = NULL;
    size_t n = 0;
    pathf(fifo, sizeof fifo, "in.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20);
    assert_int_equal(so_read_file(fifo, &buf, &n), SO_ERR_IO);
    alarm(0);
    assert_non_null(strstr(so_error(), "not a regular file"));
    assert_non_null(strstr(so_error(), fifo));
    assert_int_equal(so_read_file("/dev/zero", &buf, &n), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "not a regular file"));
    assert_int_equal(so_read_file(dir, &buf, &n), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "not a regular file"));
    pathf(p, sizeof p, "ten.txt");
    assert_int_equal(write_text(p, "0123456789"), SO_OK);
    assert_int_equal(so_read_file_max(p, 9, &buf, &n), SO_ERR_LIMIT);
    assert_non_null(strstr(so_error(), "exceeds the limit of 9 bytes"));
    assert_int_equal(so_read_file_max(p, 10, &buf, &n), SO_OK);
    assert_int_equal(n, 10);
    assert_string_equal(buf, "0123456789");
    free(buf);
}

/* An input copied unchanged (standard ONNX with no rewrite kept): byte for byte while the file is the
   one stat'ed at load; refused, with nothing written and the old output kept, once it changed (size,
   or only the modification time); src == dst leaves the file as it was. */
static void test_copy_unchanged(void **state)
{
    (void)state;
    char src[128], dst[128], buf[64];
    struct stat at_load;
    pathf(src, sizeof src, "model.bin");
    pathf(dst, sizeof dst, "copy.bin");
    assert_int_equal(write_text(src, "original"), SO_OK);
    assert_int_equal(stat(src, &at_load), 0);
    assert_int_equal(so_copy_file_unchanged(src, &at_load, dst), SO_OK);
    slurp(dst, buf, sizeof buf);
    assert_string_equal(buf, "original");
    assert_int_equal(so_copy_file_unchanged(src, &at_load, src), SO_OK);
    slurp(src, buf, sizeof buf);
    assert_string_equal(buf, "original");
    assert_int_equal(stat(src, &at_load), 0); /* src == dst renamed a new inode into place */
    assert_no_tmp();
    /* the same size, another modification time */
    FILE *f = fopen(src, "r+");
    assert_non_null(f);
    assert_int_equal(fputs("ORIGINAL", f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    struct timespec ts[2] = {{.tv_sec = at_load.st_mtim.tv_sec + 5, .tv_nsec = 0}, {.tv_sec = at_load.st_mtim.tv_sec + 5, .tv_nsec = 0}};
    assert_int_equal(utimensat(AT_FDCWD, src, ts, 0), 0);
    assert_int_equal(so_copy_file_unchanged(src, &at_load, dst), SO_ERR_IO);
    assert_non_null(strstr(so_error(), "changed while it was being optimized"));
    assert_non_null(strstr(so_error(), src));
    slurp(dst, buf, sizeof buf);
    assert_string_equal(buf, "original");
    /* another size */
    assert_int_equal(stat(src, &at_load), 0);
    assert_int_equal(write_text(src, "longer text"), SO_OK);
    assert_int_equal(so_copy_file_unchanged(src, &at_load, dst), SO_ERR_IO);
    slurp(dst, buf, sizeof buf);
    assert_string_equal(buf, "original");
    assert_no_tmp();
}

/* --max-memory as a total (item 10): charges add up to the limit and no further; a refused charge
   leaves the total unchanged and names what asked; releases give it back. */
static void test_mem_budget(void **state)
{
    (void)state;
    size_t saved = so_max_alloc_bytes, base = so_mem_charged();
    so_max_alloc_bytes = base + 1000;
    assert_int_equal(so_mem_charge(600, "first"), SO_OK);
    assert_int_equal(so_mem_charge(500, "second"), SO_ERR_LIMIT);
    assert_non_null(strstr(so_error(), "second: 500 more bytes"));
    assert_non_null(strstr(so_error(), "over the --max-memory limit"));
    assert_int_equal(so_mem_charged(), base + 600);
    assert_int_equal(so_mem_charge(400, "third"), SO_OK);
    assert_int_equal(so_mem_charged(), base + 1000);
    so_mem_release(600);
    assert_int_equal(so_mem_charge(500, "fourth"), SO_OK);
    so_mem_release(500);
    so_mem_release(400);
    assert_int_equal(so_mem_charged(), base);
    assert_int_equal(so_mem_charge((size_t)-1, "huge"), SO_ERR_LIMIT); /* no wrap-around */
    so_max_alloc_bytes = saved;
}

int main(void)
{
    /* test_signal_removes_tmp needs SIGINT / SIGTERM at their default action, which the library replaces by its
       cleanup handler (src/common.c leaves a signal the process ignores alone, as it should): a non-interactive
       shell starts a background job (`make test &`, a CI runner's job) with SIGINT ignored, and then the child
       was never killed by its SIGINT. Set before the first temporary is registered (the handlers go in once). */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_and_new),  cmocka_unit_test(test_symlinks_and_dirs), cmocka_unit_test(test_char_devices),
        cmocka_unit_test(test_fifo_output),      cmocka_unit_test(test_signal_removes_tmp), cmocka_unit_test(test_input_files),
        cmocka_unit_test(test_mem_budget),       cmocka_unit_test(test_copy_unchanged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
