"""The kconfigs subcommands that run enforcement: ``serve`` (the gateway), ``simulate`` and
``resolve``. ``kconfigs.cli`` registers them by module name, so kconfigs never imports this
package."""
