# The Debian package (./scripts/package, docs/packaging.md): CPack's DEB generator over the
# install rules of the build directory, so a build that exists is packaged in seconds
# without compiling again (the package test in CI reuses build/).
#
# The files only the package installs (systemd unit, /etc/hourglass, maintainer-time script,
# Debian docs) are in the component "deb", excluded from a plain `cmake --install`, which
# keeps the from-source install under its prefix. Man pages and bash completion are
# generated at build time from the programs themselves (packaging/gen-docs).
include(GNUInstallDirs)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

set(HG_DOCS_DIR ${PROJECT_BINARY_DIR}/packaging)
set(HG_MAN_PAGES
  ${HG_DOCS_DIR}/man/hourglassd.8.gz ${HG_DOCS_DIR}/man/hourglass-ctl.8.gz
  ${HG_DOCS_DIR}/man/hourglass-rehearse.1.gz ${HG_DOCS_DIR}/man/hourglass.toml.5.gz)
set(HG_COMPLETIONS
  ${HG_DOCS_DIR}/completion/hourglassd ${HG_DOCS_DIR}/completion/hourglass-ctl
  ${HG_DOCS_DIR}/completion/hourglass-rehearse)
add_custom_command(
  OUTPUT ${HG_MAN_PAGES} ${HG_COMPLETIONS}
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/packaging/gen-docs
          --version ${PROJECT_VERSION} --hourglassd $<TARGET_FILE:hourglassd>
          --ctl $<TARGET_FILE:hourglass-ctl> --rehearse $<TARGET_FILE:hourglass-rehearse>
          --out ${HG_DOCS_DIR}
  DEPENDS hourglassd hourglass-ctl hourglass-rehearse ${PROJECT_SOURCE_DIR}/packaging/gen-docs
  COMMENT "Generating man pages and bash completion from the programs' command-line tables"
  VERBATIM)
add_custom_target(hg_docs ALL DEPENDS ${HG_MAN_PAGES} ${HG_COMPLETIONS})

# The packaged unit: the repository's unit with the package's paths and the config file.
file(READ ${PROJECT_SOURCE_DIR}/packaging/hourglassd.service hg_unit)
string(REGEX REPLACE "\nExecStart=[^\n]*" "\nExecStart=/usr/sbin/hourglassd --config /etc/hourglass/hourglass.toml\n\
# Once hourglassd is ready, the servers and domains openresolv knows are handed to it again\n\
# as links (a restart loses them); '-': a machine without openresolv is no failure.\n\
ExecStartPost=-/usr/libexec/hourglass/hook sync" hg_unit "${hg_unit}")
string(REPLACE "Documentation=file:///usr/local/share/doc/hourglass/README.md"
  "Documentation=man:hourglassd(8) man:hourglass.toml(5) file:///usr/share/doc/hourglass/README.md" hg_unit "${hg_unit}")
string(REGEX REPLACE "# Install: see README.md[^\n]*\n" "# Installed by the hourglass package; settings: /etc/hourglass/hourglass.toml.\n" hg_unit "${hg_unit}")
file(WRITE ${HG_DOCS_DIR}/hourglassd.service "${hg_unit}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/packaging/hourglassd.service)

# Debian's changelog and copyright, compressed as dh does (-9n: no name, no time stamp).
add_custom_command(
  OUTPUT ${HG_DOCS_DIR}/changelog.gz
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/deb/changelog > ${HG_DOCS_DIR}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/deb/changelog)
add_custom_target(hg_changelog ALL DEPENDS ${HG_DOCS_DIR}/changelog.gz)

foreach(page ${HG_MAN_PAGES})
  string(REGEX REPLACE ".*\\.([0-9])\\.gz$" "\\1" sect ${page})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${sect})
endforeach()
install(FILES ${HG_COMPLETIONS} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

install(FILES ${HG_DOCS_DIR}/hourglassd.service DESTINATION /lib/systemd/system
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/hourglass.toml DESTINATION /etc/hourglass
        COMPONENT deb EXCLUDE_FROM_ALL)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/prepare-upstream
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/hourglass COMPONENT deb EXCLUDE_FROM_ALL)
# The network managers' hooks (docs/network-managers.md): one program that does the work, and
# in each manager's own folder a stub that runs it and does nothing once it is gone (the
# dhclient hook is in /etc, so a conffile, and stays until the purge).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/hooks/hook
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/hourglass COMPONENT deb EXCLUDE_FROM_ALL)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/hooks/openresolv-subscriber
        DESTINATION /lib/resolvconf RENAME hourglass COMPONENT deb EXCLUDE_FROM_ALL)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/hooks/networkmanager-dispatcher
        DESTINATION /usr/lib/NetworkManager/dispatcher.d RENAME 60-hourglass
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/hooks/dhclient-exit-hook
        DESTINATION /etc/dhcp/dhclient-exit-hooks.d RENAME hourglass
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/copyright ${HG_DOCS_DIR}/changelog.gz
        ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/SECURITY.md
        ${PROJECT_SOURCE_DIR}/HACKING.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/hourglass COMPONENT deb EXCLUDE_FROM_ALL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/hourglass/docs
        COMPONENT deb EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hourglass)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "hourglass maintainers <maintainers@hourglass.example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "caching DNS forwarder that serves stale answers")
set(CPACK_PACKAGE_DESCRIPTION
  "hourglassd is a caching DNS stub resolver (a forwarder) meant to be the\n\
machine's own resolver. It answers from a cache whose records count their\n\
TTLs down, collapses identical queries into one upstream query, serves stale\n\
answers when the upstreams fail (RFC 8767) and answers on time when they are\n\
slow.\n\
.\n\
The package contains hourglassd with a hardened systemd unit, hourglass-ctl\n\
(statistics, cache dumps and flushes, a live top view, switching\n\
/etc/resolv.conf over and back) and hourglass-rehearse (rehearsing a DNS\n\
migration: upstream load at lower TTLs, when an old answer is gone from\n\
caches).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postinst creates the system user hourglass with adduser (for starts without systemd:
# hourglassd --user hourglass); the shared-library dependencies are added to this.
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
# The root's trust anchor (/usr/share/dns/root.key) that DNSSEC validation, on by default,
# starts from; without it hourglassd runs without validation and says so.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS dns-root-data)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/deb/postinst ${PROJECT_SOURCE_DIR}/packaging/deb/prerm
  ${PROJECT_SOURCE_DIR}/packaging/deb/postrm ${PROJECT_SOURCE_DIR}/packaging/deb/conffiles)
# Everything in one package: the default component and the package-only files.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL Unspecified deb)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
include(CPack)
