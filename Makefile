# flake: time-ordered 64-bit keys for PostgreSQL.  A PGXS extension (the
# library, its SQL scripts and the program flake_migrate_online); `make
# help` lists the developer targets of tools/dev.mk.

EXTENSION = flake
MODULE_big = flake
PGFILEDESC = "flake - time-ordered 64-bit keys"

# Out-of-tree builds (`make -f ../Makefile`, Debian's pg_buildext with
# VPATH) find the sources from this Makefile's directory and build into
# the current one; in the tree both are ".".  The source tree must then
# hold no objects or built scripts of its own (make clean there).
FLAKE_SRC := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

OBJS = $(patsubst $(FLAKE_SRC)/%.c,%.o,$(sort $(wildcard $(FLAKE_SRC)/src/*.c)))
# private headers, never installed: no other code builds against them
FLAKE_HEADERS = $(wildcard $(FLAKE_SRC)/src/*.h)
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(FLAKE_SRC)/flake.control)

# The scripts.  The base version's install script (sql/flake--1.0.sql)
# and the released upgrade scripts are kept as they shipped (sql/); the
# chain builds every released version from them.  The current version's
# install script and its upgrade script are built from sql/parts: the
# upgrade part (only what changes in an existing install), then the
# objects new in this version (ADDED_PARTS), then the parts every upgrade
# replaces whole (the Citus check, the migration functions in the order of
# their phases), then the grants, after every object exists.  The install
# script has the parts an upgrade never replaces (INSTALL_PARTS) in place
# of the upgrade part; when the next version opens, what ADDED_PARTS holds
# moves into them.  Both start with the check of the library the server
# runs (LIBRARY_PART, given this version).
# DATA is relative to the source tree, DATA_built to the build directory.
UPGRADES = $(patsubst $(FLAKE_SRC)/sql/parts/upgrade--%.sql,sql/flake--%.sql,$(wildcard $(FLAKE_SRC)/sql/parts/upgrade--*.sql))
DATA = $(filter-out sql/flake--$(EXTVERSION).sql $(UPGRADES),$(patsubst $(FLAKE_SRC)/%,%,$(wildcard $(FLAKE_SRC)/sql/flake--*.sql)))
DATA_built = sql/flake--$(EXTVERSION).sql $(UPGRADES)
LIBRARY_PART = sql/parts/library.sql
INSTALL_PARTS = sql/parts/flake.sql sql/parts/state.sql
ADDED_PARTS = sql/parts/added.sql
REPLACED_PARTS = sql/parts/citus.sql $(patsubst $(FLAKE_SRC)/%,%,$(sort $(wildcard $(FLAKE_SRC)/sql/parts/migrate/*.sql)) \
	$(sort $(wildcard $(FLAKE_SRC)/sql/parts/online/*.sql))) sql/parts/privileges.sql

# -Wextra with PostgreSQL's fmgr convention: every PG_FUNCTION_ARGS function
# takes fcinfo, used or not.  FLAKE_WERROR=1 makes warnings errors (CI),
# FLAKE_ASSERT=1 turns on Assert() in our code, FLAKE_PORTABLE=1 takes the
# code paths of CPUs other than x86-64 (no time-stamp counter, SSE2 or
# AVX2), so that the suite compiles and tests them here too.
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter
FLAKE_BUILD_FLAGS = $(strip $(if $(filter 1,$(FLAKE_WERROR)),-Werror) \
	$(if $(filter 1,$(FLAKE_ASSERT)),-DUSE_ASSERT_CHECKING) \
	$(if $(filter 1,$(FLAKE_PORTABLE)),-DFLAKE_PORTABLE))
PG_CPPFLAGS += $(FLAKE_BUILD_FLAGS) -DFLAKE_VERSION='"$(EXTVERSION)"'

# `make installcheck`: pg_regress (test/sql, test/expected) and the
# isolation specs (test/specs) against a running server that has the
# settings of test/flake.conf and has not run them before (rekeys' node
# claims stay in its data directory).  `make prove_installcheck`: the TAP
# tests (test/t), on servers of their own.
REGRESS = $(patsubst $(FLAKE_SRC)/test/sql/%.sql,%,$(sort $(wildcard $(FLAKE_SRC)/test/sql/*.sql)))
REGRESS_OPTS = --inputdir=$(FLAKE_SRC)/test --encoding=UTF8 --no-locale
ISOLATION = $(patsubst $(FLAKE_SRC)/test/specs/%.spec,%,$(sort $(wildcard $(FLAKE_SRC)/test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=$(FLAKE_SRC)/test --encoding=UTF8 --no-locale
PROVE_TESTS = test/t/*.pl
# the tests read test/data (the vectors) from the current directory
REGRESS_PREP = $(CURDIR)/test/data
EXTRA_CLEAN = tmp_check tmp_check_regress tmp_check_isolation results output_iso regression.* sql-edition \
	test/unit/*.bin .flake-build-flags

# PGXS, from pg_config.  Without one (a fresh machine) only the targets
# that install PostgreSQL themselves work (make demo, make test: see the
# end of this file), and make says nothing alarming while it reads this.
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(wildcard $(PGXS)),)
include $(PGXS)
endif

# The program flake_migrate_online (client/, a PGXS program of its own),
# built in client/ of the build directory
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
$(CURDIR)/client $(CURDIR)/src:
	mkdir -p $@

sql/flake--$(EXTVERSION).sql: $(LIBRARY_PART) $(INSTALL_PARTS) $(ADDED_PARTS) $(REPLACED_PARTS)
	@mkdir -p $(@D)
	{ echo '/* $(notdir $@), built by make from $(patsubst $(FLAKE_SRC)/%,%,$^) */'; \
	  printf '%s\n' '\echo Use "CREATE EXTENSION flake" to load this file. \quit'; \
	  sed 's/@FLAKE_VERSION@/$(EXTVERSION)/' $<; cat $(wordlist 2,$(words $^),$^); } > $@
$(UPGRADES): sql/flake--%.sql: $(LIBRARY_PART) sql/parts/upgrade--%.sql $(ADDED_PARTS) $(REPLACED_PARTS)
	@mkdir -p $(@D)
	{ echo '/* $(notdir $@), built by make from $(patsubst $(FLAKE_SRC)/%,%,$^) */'; \
	  printf '%s\n' '\echo Use "ALTER EXTENSION flake UPDATE" to load this file. \quit'; \
	  sed 's/@FLAKE_VERSION@/$(EXTVERSION)/' $<; cat $(wordlist 2,$(words $^),$^); } > $@

# PGXS tracks no header dependencies: rebuild everything when a header or
# the build flags change.  Out of the tree, src/ must be made first.
$(OBJS) $(OBJS:.o=.bc): $(FLAKE_HEADERS) .flake-build-flags | $(CURDIR)/src
.flake-build-flags: FORCE
	@echo '$(FLAKE_BUILD_FLAGS)' | cmp -s - $@ || echo '$(FLAKE_BUILD_FLAGS)' > $@
$(CURDIR)/test/data:
	mkdir -p $(@D)
	ln -s $(abspath $(FLAKE_SRC))/test/data $@
FORCE:
prove_installcheck check-tap:
	$(prove_installcheck)
.PHONY: client install-client uninstall-client clean-client prove_installcheck check-tap FORCE

include $(FLAKE_SRC)/tools/dev.mk

ifeq ($(wildcard $(PGXS)),)
ifneq ($(filter-out $(FLAKE_WITHOUT_PGXS),$(or $(MAKECMDGOALS),all)),)
$(error $(PG_CONFIG) not found, or it has no PGXS: install the server's development files \
	(Debian: postgresql-server-dev-NN; make demo and make test install them), or name a \
	PostgreSQL with PG_CONFIG=/path/to/pg_config)
endif
endif
