
------------------------------------------------------------------------
-- The objects new in this version (1.5)
--
-- Appended by make to the install script, after the install parts, and
-- to the upgrade script, after the upgrade part: each is written once,
-- so that both create it alike.  When the next version opens, each
-- section moves into the install part it names, and this file keeps only
-- this header.
------------------------------------------------------------------------
