# The developer targets of flake, included by the Makefile: trying and
# testing flake (the scripts of tools/), the suite in parts, benchmarks
# (bench/), packaging and the layout of the C.  `make help` lists them.

define FLAKE_HELP
flake: time-ordered 64-bit keys for PostgreSQL.  Besides PGXS's all,
install, installcheck and clean:

Try and test
  demo                build, install and show flake on a throwaway cluster
  test                build, install and run every suite: "N passed, N failed, N skipped"
  prove_installcheck  the TAP tests, on servers of their own (also: check-tap)
  check-citus         the Citus test: a coordinator and two workers
  explore             random orders of operators' steps and faults, checked for ids
                      issued twice (EXPLORE_SEED=n, EXPLORE_SECONDS, EXPLORE_INSTALLED=1)
  sql-edition         the SQL edition's two scripts (pg_tle, plain SQL); prints their paths
  matrix              make test on every major, in Debian chroots (PG_MAJORS="17 18")
  cross-major         pg_upgrade and pg_upgradecluster 15 -> 17 -> 18, in a Debian chroot
Develop
  check-regress       pg_regress on a temporary instance
  check-isolation     the isolation specs on a temporary instance
  check-unit          the C unit tests
  check-examples      every SQL example of README.md and docs/*.md
  check-structure     the C files depend one way
  check-meta          the release metadata at flake.control's version
  check-paths         the paths comments and docs name exist, the links resolve, the docs stay short
  check-majors        how the scripts choose their PostgreSQL
  indent              lay out the C as pgindent does (check-indent: fail if not)
  list-regress, list-isolation   the suites' tests, one a line
Measure
  bench               the generators and the migration against their peers
  bench-baseline      the hot path against the previous release, side by side
  bench-migrate       flake_migrate() on 1M + 1M rows
  bench-online        flake_migrate_online on 10M + 10M rows under pgbench load
Package
  dist                flake-<version>.zip for PGXN, from git HEAD
  packages            build, install, test and remove the .deb and the zip (CI)

Variables: PG_CONFIG=/path/to/pg_config or PG_MAJOR=17 (demo, test, bench*,
check-citus); PG_MAJORS (matrix, packages); FLAKE_ASSERT=1, FLAKE_PORTABLE=1,
FLAKE_WERROR=1 (the build).  docs/development.md says more.
endef
export FLAKE_HELP
help:
	@echo "$$FLAKE_HELP"

# Scripts that start servers, as an unprivileged user when run as root
# (tools/lib.sh).  They and the targets after them in this list need no
# PGXS: they install PostgreSQL themselves, or use none.
FLAKE_WITHOUT_PGXS = help test demo matrix packages check-citus explore sql-edition bench bench-baseline bench-migrate bench-online \
	check-meta check-paths check-majors list-regress list-isolation dist
test:
	$(FLAKE_SRC)/tools/run
demo:
	$(FLAKE_SRC)/tools/demo
matrix:
	$(FLAKE_SRC)/tools/matrix
cross-major:
	$(FLAKE_SRC)/tools/cross-major
packages:
	$(FLAKE_SRC)/tools/packages
check-citus:
	$(FLAKE_SRC)/tools/citus
explore:
	$(FLAKE_SRC)/tools/explore
sql-edition:
	@$(FLAKE_SRC)/tools/sql-edition $(CURDIR)/sql-edition
bench:
	$(FLAKE_SRC)/bench/run
bench-baseline:
	$(FLAKE_SRC)/bench/baseline
bench-migrate:
	$(FLAKE_SRC)/bench/migrate
bench-online:
	$(FLAKE_SRC)/bench/online

# The suite in parts; tools/run calls them as an unprivileged user, against
# temporary instances with test/flake.conf's settings
TEMP_INSTANCE_CONF = --temp-config=$(FLAKE_SRC)/test/flake.conf
check-regress: $(REGRESS_PREP)
	$(pg_regress_installcheck) $(REGRESS_OPTS) --temp-instance=tmp_check_regress $(TEMP_INSTANCE_CONF) $(REGRESS)
check-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --temp-instance=tmp_check_isolation $(TEMP_INSTANCE_CONF) $(ISOLATION)
check-structure: all
	$(FLAKE_SRC)/tools/check-structure
check-meta:
	$(FLAKE_SRC)/tools/check-meta
check-paths:
	$(FLAKE_SRC)/tools/check-paths
# every SQL example of README.md and docs/*.md, on a server of its own from
# the installation (initdb, pg_ctl and psql on PATH)
check-examples:
	$(FLAKE_SRC)/test/check-examples
check-majors:
	$(FLAKE_SRC)/tools/check-majors

# The suites' lists, one word a line, for test/fuzz/valgrind
list-regress:
	@printf '%s\n' $(REGRESS)
list-isolation:
	@printf '%s\n' $(ISOLATION)

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
	$(FLAKE_SRC)/tools/indent $(OBJS) $(CLIENT_OBJS) -- $(INDENT_FILES)
check-indent: $(OBJS) client
	$(FLAKE_SRC)/tools/indent --check $(OBJS) $(CLIENT_OBJS) -- $(INDENT_FILES)

# PGXN: the committed tree (HEAD) as flake-<version>.zip under a
# flake-<version>/ prefix, the version being META.json's (tools/check-meta
# keeps it in step with flake.control); .gitattributes leaves out what
# users of the zip do not need (export-ignore).
DIST_VERSION = $(shell sed -n 's/^   "version": "\(.*\)",$$/\1/p' $(FLAKE_SRC)/META.json)
DIST_DIR = $(CURDIR)
dist:
	git -C $(FLAKE_SRC) archive --format zip --prefix=flake-$(DIST_VERSION)/ \
		--output $(abspath $(DIST_DIR))/flake-$(DIST_VERSION).zip HEAD

.PHONY: help test demo matrix cross-major packages check-citus explore sql-edition bench bench-baseline bench-migrate bench-online check-regress check-isolation \
	check-structure check-meta check-paths check-examples check-majors list-regress list-isolation check-unit indent \
	check-indent dist
