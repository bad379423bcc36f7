# flake: time-ordered 64-bit keys for PostgreSQL
#
#   make demo   build, install and show flake on a throwaway cluster
#               (make and make install also build and install the client
#               program flake_migrate_online, from client/)
#   make test   build, install and run the whole suite
#   make bench  benchmarks (test/bench; PG_MAJOR=18 on PostgreSQL 18, in
#               make matrix's chroot where apt here has no postgresql-18)
#   make bench-migrate  flake_migrate() on 1M + 1M rows (test/bench/migrate)
#   make check-citus  flake on a Citus cluster (test/t/060_citus.pl) against
#               this PostgreSQL, with Citus installed (see test/citus)
#   make bench-online   flake_migrate_online on 10M + 10M rows under a steady
#               pgbench load, against flake_migrate (test/bench/online)
#   make matrix the suite on every PostgreSQL major, in Debian chroots
#               (PG_MAJORS="17 18" for some; see test/matrix)
#
# demo, test, bench, bench-migrate, bench-online and check-citus build and
# run against PG_CONFIG's PostgreSQL when it is set, else against Debian's
# postgresql-$(PG_MAJOR), by default this Debian suite's (test/lib.sh)
#   make indent lay out the C sources as PostgreSQL's pgindent does
#               (make check-indent: fail where they are not; test/indent)
#   make installcheck  pg_regress and isolation against a running server
#               with test/flake.conf's settings (make prove_installcheck:
#               the TAP tests)
#   make dist   flake-<version>.zip for PGXN, from git HEAD
#   make packages  build, install, test and remove the .deb on this machine
#               and in the chroots, and the PGXN zip (CI; test/packages)

EXTENSION = flake
MODULE_big = flake

# Out-of-tree builds: the sources are found from this Makefile's directory
# and what is built goes to the current one, so that
# `make -f ../Makefile` and Debian's `pg_buildext build build-%v` (make -C
# build-15 -f $PWD/Makefile VPATH=$PWD) work; in the tree both are ".".  The
# source tree must then hold no objects or built scripts of its own (make
# clean there), which make would take for up to date through VPATH.
FLAKE_SRC := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

OBJS = $(patsubst $(FLAKE_SRC)/%.c,%.o,$(sort $(wildcard $(FLAKE_SRC)/src/*.c)))
# Private headers: never installed (PGXS's HEADERS would put them under
# include/server/extension/flake, but no other code builds against them).
FLAKE_HEADERS = $(wildcard $(FLAKE_SRC)/src/*.h)
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(FLAKE_SRC)/flake.control)

# Install scripts: released versions are kept as they shipped; the current
# version's script and the upgrade scripts are built from sql/parts, so the
# migration functions and the Citus check live in one file each (every
# upgrade replaces them whole); privileges.sql, the grants, comes last in
# both, after every object exists.
# DATA is relative to the source tree, DATA_built to the build directory.
UPGRADES = $(patsubst $(FLAKE_SRC)/sql/parts/upgrade--%.sql,sql/flake--%.sql,$(wildcard $(FLAKE_SRC)/sql/parts/upgrade--*.sql))
DATA = $(filter-out sql/flake--$(EXTVERSION).sql $(UPGRADES),$(patsubst $(FLAKE_SRC)/%,%,$(wildcard $(FLAKE_SRC)/sql/flake--*.sql)))
DATA_built = sql/flake--$(EXTVERSION).sql $(UPGRADES)
PGFILEDESC = "flake - time-ordered 64-bit keys"

# -Wextra with PostgreSQL's fmgr convention: every PG_FUNCTION_ARGS function
# takes fcinfo, used or not.
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter

# Builds for the suite, all off by default: FLAKE_WERROR=1 makes warnings
# errors (CI), FLAKE_ASSERT=1 turns on PostgreSQL's Assert() in our code,
# and FLAKE_PORTABLE=1 takes the code paths of CPUs other than x86-64 (the
# clock without the time-stamp counter, the Randflake batch without SSE2,
# the log filter's scan without AVX2) so that they are compiled and tested here too.  .flake-build-flags
# remembers the last set, so that a change rebuilds everything.
FLAKE_BUILD_FLAGS = $(strip $(if $(filter 1,$(FLAKE_WERROR)),-Werror) \
	$(if $(filter 1,$(FLAKE_ASSERT)),-DUSE_ASSERT_CHECKING) \
	$(if $(filter 1,$(FLAKE_PORTABLE)),-DFLAKE_PORTABLE))
PG_CPPFLAGS += $(FLAKE_BUILD_FLAGS)

# The suites.  `make installcheck` runs pg_regress (sql/, expected/) and
# the isolation specs (test/isolation) against a running server, which must
# have the settings of test/flake.conf (flake preloaded, the test secret,
# flake.nodes and flake.rekey_nodes; see README "Installing") and must not
# have run them before: rekeys' node claims are kept in the data directory,
# so the migration tests of a second run find their nodes taken.  The two
# suites rekey disjoint times, so they share one cluster.  check-regress and
# check-isolation (make test) run the same against temporary instances with
# test/flake.conf.  The TAP tests start their own servers from the
# installation: `make prove_installcheck` (or check-tap), not part of
# installcheck, which stays fast.
REGRESS = $(filter-out flake--%,$(patsubst $(FLAKE_SRC)/sql/%.sql,%,$(sort $(wildcard $(FLAKE_SRC)/sql/*.sql))))
REGRESS_OPTS = --encoding=UTF8 --no-locale
ISOLATION = $(patsubst $(FLAKE_SRC)/test/isolation/specs/%.spec,%,$(sort $(wildcard $(FLAKE_SRC)/test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=$(FLAKE_SRC)/test/isolation --encoding=UTF8 --no-locale
TEMP_INSTANCE_CONF = --temp-config=$(FLAKE_SRC)/test/flake.conf
PROVE_TESTS = test/t/*.pl
# pg_regress runs psql in the current directory, where the tests read
# test/data (the vectors); out of the tree it is linked there first.
REGRESS_PREP = $(CURDIR)/test/data
EXTRA_CLEAN = tmp_check tmp_check_regress tmp_check_isolation results output_iso \
	test/isolation/results test/isolation/output_iso regression.* test/unit/*.bin \
	.flake-build-flags

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The client program of the online migration (client/, a PGXS program of
# its own: PGXS builds one of a library or a program per Makefile), built
# in client/ of the build directory, out of the tree too
CLIENT_MAKE = $(MAKE) -C $(CURDIR)/client -f $(abspath $(FLAKE_SRC))/client/Makefile \
	VPATH=$(abspath $(FLAKE_SRC))/client PG_CONFIG=$(PG_CONFIG)
all: client
client: | $(CURDIR)/client
	$(CLIENT_MAKE) FLAKE_BUILD_FLAGS='$(FLAKE_BUILD_FLAGS)'
install: install-client
install-client: client
	$(CLIENT_MAKE) install
uninstall: uninstall-client
uninstall-client: | $(CURDIR)/client
	$(CLIENT_MAKE) uninstall
clean: clean-client
clean-client: | $(CURDIR)/client
	$(CLIENT_MAKE) clean
$(CURDIR)/client:
	mkdir -p $@

# PGXS tracks no header dependencies: rebuild everything when one changes,
# or when the build flags do.  Out of the tree, src/ must be made here
# first (an absolute path, which make does not look up through VPATH).
$(OBJS) $(OBJS:.o=.bc): $(FLAKE_HEADERS) .flake-build-flags | $(CURDIR)/src
.flake-build-flags: FORCE
	@echo '$(FLAKE_BUILD_FLAGS)' | cmp -s - $@ || echo '$(FLAKE_BUILD_FLAGS)' > $@
$(CURDIR)/src:
	mkdir -p $@
$(CURDIR)/test/data:
	mkdir -p $(@D)
	ln -s $(abspath $(FLAKE_SRC))/test/data $@
FORCE:

# The suite in parts; test/run calls them as an unprivileged user.
check-regress: $(REGRESS_PREP)
	$(pg_regress_installcheck) $(REGRESS_OPTS) --temp-instance=tmp_check_regress $(TEMP_INSTANCE_CONF) $(REGRESS)
check-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --temp-instance=tmp_check_isolation $(TEMP_INSTANCE_CONF) $(ISOLATION)
prove_installcheck check-tap:
	$(prove_installcheck)
check-structure: all
	$(FLAKE_SRC)/test/check-structure
check-meta:
	$(FLAKE_SRC)/test/check-meta
# every SQL example of README.md and docs/*.md, run on a server of its own
# from the installation (initdb, pg_ctl and psql on PATH)
check-examples:
	$(FLAKE_SRC)/test/check-examples
check-majors:
	$(FLAKE_SRC)/test/check-majors

# The suite's lists, one word per line, for scripts that run the same tests
# another way (test/fuzz/valgrind)
list-regress:
	@printf '%s\n' $(REGRESS)
list-isolation:
	@printf '%s\n' $(ISOLATION)

test:
	test/run

demo:
	test/demo

matrix:
	test/matrix

packages:
	test/packages

check-citus:
	test/citus

bench:
	test/bench/run

bench-migrate:
	test/bench/migrate

bench-online:
	test/bench/online

sql/flake--$(EXTVERSION).sql: sql/parts/flake.sql sql/parts/citus.sql sql/parts/migrate.sql sql/parts/migrate_online.sql \
		sql/parts/privileges.sql
	@mkdir -p $(@D)
	{ echo '/* $(notdir $@), built by make from $(patsubst $(FLAKE_SRC)/%,%,$^) */'; \
	  printf '%s\n' '\echo Use "CREATE EXTENSION flake" to load this file. \quit'; \
	  cat $^; } > $@

$(UPGRADES): sql/flake--%.sql: sql/parts/upgrade--%.sql sql/parts/citus.sql sql/parts/migrate.sql sql/parts/migrate_online.sql \
		sql/parts/privileges.sql
	@mkdir -p $(@D)
	{ echo '/* $(notdir $@), built by make from $(patsubst $(FLAKE_SRC)/%,%,$^) */'; \
	  printf '%s\n' '\echo Use "ALTER EXTENSION flake UPDATE" to load this file. \quit'; \
	  cat $^; } > $@

# PGXN: the committed tree (HEAD) as flake-<version>.zip under a
# flake-<version>/ prefix, the version being META.json's (test/check-meta
# keeps it in step with flake.control); .gitattributes leaves out what
# users of the zip do not need (export-ignore).
DIST_VERSION = $(shell sed -n 's/^   "version": "\(.*\)",$$/\1/p' $(FLAKE_SRC)/META.json)
DIST_DIR = $(CURDIR)
dist:
	git -C $(FLAKE_SRC) archive --format zip --prefix=flake-$(DIST_VERSION)/ \
		--output $(abspath $(DIST_DIR))/flake-$(DIST_VERSION).zip HEAD

.PHONY: client install-client uninstall-client clean-client bench-online dist packages check-meta check-examples check-majors list-regress list-isolation check-citus check-regress check-isolation check-tap prove_installcheck check-unit check-structure check-indent indent test matrix demo bench bench-migrate FORCE

# C unit tests of the plain-C parts, against the vectors in test/data
UNIT_TESTS = test/unit/test_randflake test/unit/test_keyscan
test/unit/test_randflake.bin: test/unit/test_randflake.c src/sparx.c src/sparx.h src/randflake.h .flake-build-flags
	@mkdir -p $(@D)
	$(CC) -Wall -Wextra -O2 $(FLAKE_BUILD_FLAGS) -I$(FLAKE_SRC)/src -o $@ $(filter %.c,$^)
# (test_keyscan.c includes src/keyscan.c, to count the scan's steps)
test/unit/test_keyscan.bin: test/unit/test_keyscan.c test/unit/keyscan_reference.h src/keyscan.c src/keyscan.h .flake-build-flags
	@mkdir -p $(@D)
	$(CC) -Wall -Wextra -O2 $(FLAKE_BUILD_FLAGS) -I$(FLAKE_SRC)/src -o $@ $<
check-unit: $(UNIT_TESTS:=.bin)
	@for t in $^; do ./$$t $(FLAKE_SRC)/test/data || exit 1; done

# pgindent's layout (Debian's pg_bsd_indent), with the typedefs read from
# the debug information of the objects built here
INDENT_FILES = $(sort $(wildcard src/*.c src/*.h client/*.c test/unit/*.c test/fuzz/*.c))
CLIENT_OBJS = client/flake_migrate_online.o
indent: $(OBJS) client
	test/indent $(OBJS) $(CLIENT_OBJS) -- $(INDENT_FILES)
check-indent: $(OBJS) client
	test/indent --check $(OBJS) $(CLIENT_OBJS) -- $(INDENT_FILES)
