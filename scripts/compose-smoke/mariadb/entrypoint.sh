#!/bin/sh
set -eu
pw=${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:?MARIADB_ROOT_PASSWORD is required}}
mkdir -p /var/lib/mysql /run/mysqld
chown -R mysql:mysql /var/lib/mysql /run/mysqld
if [ ! -d /var/lib/mysql/mysql ]; then
	mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >/dev/null
	q=$(printf '%s' "$pw" | sed "s/'/''/g")
	mariadbd --user=mysql --datadir=/var/lib/mysql --bootstrap --skip-networking <<SQL
FLUSH PRIVILEGES;
ALTER USER 'root'@'localhost' IDENTIFIED BY '$q';
CREATE USER 'root'@'%' IDENTIFIED BY '$q';
GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
fi
exec mariadbd --user=mysql --datadir=/var/lib/mysql --bind-address=0.0.0.0 --skip-name-resolve
